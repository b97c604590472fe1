package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

var storeKeys = keySet{known: []string{"url", "password_env", "audit_key"}}

// Store is store: {url, password_env, audit_key}, where the host keeps its
// journal, approvals and audit trail.
type Store struct {
	// URL is the PostgreSQL database that several replicas share
	// (postgres://USER@HOST:PORT/DATABASE), without a password; "" keeps
	// them in the embedded SQLite database in the state directory.
	URL string
	// PasswordEnv names the host variable that holds the database's
	// password, "" for none (the server trusts the host, or a client
	// certificate or ~/.pgpass answers). It was verified to be set and not
	// empty when the configuration was read.
	PasswordEnv string
	// AuditKey is the absolute path of the audit trail's key file, for a
	// PostgreSQL store, which every replica must be given (a copy of the
	// same file): "" is audit.key in the state directory. The SQLite store
	// keeps its key beside its database.
	AuditKey string
}

// store reads store: {url, password_env, audit_key}. An empty value is the
// same as leaving its key out.
func (r *yamlReader) store(p pair, s *Store) {
	f, ok := r.fields(p.val, "store", storeKeys)
	if !ok {
		return
	}
	if kp, ok := f["url"]; ok {
		if v, ok := r.text(kp.val, "store.url"); ok && v != "" {
			if msg := checkStoreURL(v); msg != "" {
				r.errorf(resolve(kp.val).Line, "store.url", "%s", msg)
			} else {
				s.URL = v
			}
		}
	}
	postgres := s.URL != "" || r.failedUnder("store")
	if kp, ok := f["password_env"]; ok {
		if v, ok := r.text(kp.val, "store.password_env"); ok && v != "" && !postgres {
			r.errorf(resolve(kp.val).Line, "store.password_env", "is only used with store.url: the embedded SQLite store has no password")
		} else if ok && v != "" {
			s.PasswordEnv = r.hostSecretEnv(kp, "store.password_env", "the database password")
		}
	}
	if kp, ok := f["audit_key"]; ok {
		v, ok := r.text(kp.val, "store.audit_key")
		switch {
		case !ok || v == "":
		case !postgres:
			r.errorf(resolve(kp.val).Line, "store.audit_key", "is only used with store.url: the embedded SQLite store keeps its key beside its database")
		default:
			if abs, msg := checkAuditKeyFile(r.dir, v); msg != "" {
				r.errorf(resolve(kp.val).Line, "store.audit_key", "%s", msg)
			} else {
				s.AuditKey = abs
			}
		}
	}
}

// checkStoreURL checks store.url. Messages do not quote it, since a
// refused one may carry a password.
func checkStoreURL(raw string) string {
	const example = "such as postgres://airlock@db.internal:5432/airlock"
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "is not a URL: give a PostgreSQL URL, " + example
	case u.Scheme != "postgres" && u.Scheme != "postgresql":
		return "must be a postgres:// URL, " + example + ", or be left out for the embedded SQLite store"
	case u.Opaque != "":
		return "must be a postgres:// URL with a host, " + example
	case hasPassword(u):
		return "must not contain a password: put it in an environment variable and name that variable with store.password_env"
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "must not contain a fragment (#)"
	case strings.Trim(u.Path, "/") == "":
		return "must name the database, " + example
	}
	return ""
}

// hasPassword reports whether u holds a password, in its user information
// or as a query parameter.
func hasPassword(u *url.URL) bool {
	if _, set := u.User.Password(); set {
		return true
	}
	q, err := url.ParseQuery(u.RawQuery)
	return err != nil || q.Has("password")
}

// checkAuditKeyFile checks store.audit_key, relative to the configuration's
// directory: a file that need not exist yet (the first append makes it,
// mode 0600) in a directory that does, and if it exists, a regular file
// that only its owner may read or write. It returns the absolute path.
func checkAuditKeyFile(dir, name string) (string, string) {
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if d, err := os.Stat(filepath.Dir(path)); err != nil || !d.IsDir() {
			return "", fmt.Sprintf("%s: its directory does not exist; the file itself is made by the first append", show(name))
		}
		return path, ""
	case err != nil:
		return "", fmt.Sprintf("file %s %s", show(name), describeFSError(err))
	case !info.Mode().IsRegular():
		return "", fmt.Sprintf("%s is not a regular file", show(name))
	case runtime.GOOS != "windows" && info.Mode().Perm()&0o077 != 0:
		return "", fmt.Sprintf("%s may be read or written by others (mode %04o): make it readable only by its owner (chmod 600)", show(name), info.Mode().Perm())
	}
	return path, ""
}
