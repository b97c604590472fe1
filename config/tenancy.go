package config

import (
	"fmt"
	"net/url"
	"os/user"
	"regexp"
	"strconv"
	"strings"
)

var (
	tenancyKeys = keySet{known: []string{"tenant", "user"}}
	egressKeys  = keySet{known: []string{"proxy"}}
)

// partitionPattern is what a tenant or user may be: they end up in
// credential partition keys, Cedar entity ids and audit records, so they
// are kept to characters that need no quoting anywhere.
var partitionPattern = regexp.MustCompile(`^[A-Za-z0-9._@+-]{1,128}$`)

const partitionRule = "use 1 to 128 letters, digits, ., _, @, + or -"

// CheckPrincipal checks a tenant or user name given other than in the
// configuration (a library's Options or a task's), by the rules of
// tenancy:. what names it in the message ("tenant", "user").
func CheckPrincipal(what, name string) error {
	if !partitionPattern.MatchString(name) {
		return fmt.Errorf("%s %q: %s", what, name, partitionRule)
	}
	return nil
}

// tenancy reads tenancy: {tenant, user}. ${VAR} in a value is expanded from
// the environment, so that `user: "${USER}"` names whoever runs airlock
// (where USER is unset, as the default does).
// userSet reports whether the user key is there, valid or not.
func (r *yamlReader) tenancy(p pair, t *Tenancy) (userSet bool) {
	f, ok := r.fields(p.val, "tenancy", tenancyKeys)
	if !ok {
		return false
	}
	_, userSet = f["user"]
	for _, key := range tenancyKeys.known {
		kp, has := f[key]
		if !has {
			continue
		}
		path := "tenancy." + key
		written, ok := r.text(kp.val, path)
		if !ok {
			continue
		}
		lookup := r.lookupEnv
		if strings.Contains(written, "${USER}") {
			// ${USER} names whoever runs airlock, as the default
			// does: where USER is unset or empty (cron, containers,
			// services), the account's name.
			lookup = r.lookupUser
		}
		v, msg := expand(written, lookup)
		switch {
		case msg != "":
		case !partitionPattern.MatchString(v) && v != written:
			// The expanded value is not shown: it came from the
			// environment, not from the file.
			msg = fmt.Sprintf("%s does not expand to a valid %s: %s", show(written), key, partitionRule)
		case !partitionPattern.MatchString(v):
			msg = fmt.Sprintf("%s is not a valid %s: %s", show(written), key, partitionRule)
		}
		if msg != "" {
			r.errorf(resolve(kp.val).Line, path, "%s", msg)
			continue
		}
		if key == "tenant" {
			t.Tenant = v
		} else {
			t.User = v
		}
	}
	return userSet
}

// lookupUser looks name up in the environment; USER, unset or empty, is
// the user the default names (see defaultUser).
func (r *yamlReader) lookupUser(name string) (string, bool) {
	if v, ok := r.lookupEnv(name); ok && v != "" || name != "USER" {
		return v, ok
	}
	if u, msg := defaultUser(r.lookupEnv, user.Current); msg == "" {
		return u, true
	}
	return "", false
}

// defaultUser returns the user the command line acts for when the
// configuration names none: $USER, else the name of the account airlock
// runs as (from current), else "default". msg is set when that name cannot
// be used.
func defaultUser(lookupEnv func(string) (string, bool), current func() (*user.User, error)) (name, msg string) {
	from := "$USER"
	name, ok := lookupEnv("USER")
	if !ok || name == "" {
		from = "the account airlock runs as"
		if u, err := current(); err == nil && u.Username != "" {
			name = u.Username
		} else {
			return "default", ""
		}
	}
	if !partitionPattern.MatchString(name) {
		return "", fmt.Sprintf("the user name of %s is not a valid user (%s): set tenancy.user in an airlock.yaml", from, partitionRule)
	}
	return name, ""
}

// egress reads egress: {proxy}.
func (r *yamlReader) egress(p pair, e *Egress) {
	f, ok := r.fields(p.val, "egress", egressKeys)
	if !ok {
		return
	}
	if pp, ok := f["proxy"]; ok {
		if v, ok := r.text(pp.val, "egress.proxy"); ok {
			if msg := checkProxy(v); msg != "" {
				r.errorf(resolve(pp.val).Line, "egress.proxy", "%s", msg)
			} else {
				e.Proxy = v
			}
		}
	}
}

// checkProxy checks an egress proxy URL. Messages do not quote it, since a
// refused one may carry credentials.
func checkProxy(raw string) string {
	const example = "such as http://proxy.internal:3128"
	if raw == "" {
		return "must not be empty: give the proxy's URL, " + example + ", or remove the key for no proxy"
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "is not a URL: give one " + example
	case u.Scheme != "http" && u.Scheme != "https":
		return "must be an http or https URL, " + example
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return "must name the proxy's host, " + example
	case u.User != nil:
		return "must not contain user information: credentials do not belong in the configuration"
	case u.RawQuery != "" || u.ForceQuery:
		return "must not contain a query: give the scheme, host and port only"
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "must not contain a fragment: give the scheme, host and port only"
	case u.Path != "" && u.Path != "/":
		return "must not contain a path: give the scheme, host and port only"
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "has an invalid port: use 1 to 65535"
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return "has an empty port: give one, or leave out the colon"
	}
	return ""
}
