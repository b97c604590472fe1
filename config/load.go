package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// LoadOptions adjusts [Load]. The zero value, or nil, is ready to use.
type LoadOptions struct {
	// Allow holds "SERVER:TOOL" entries, as given to the command line's
	// --allow, for an mcpServers JSON file ("SERVER:*" allows every tool).
	// An airlock.yaml lists its tools under allowed_tools instead, so Allow
	// must be empty for one.
	Allow []string
}

// Find returns the path of the configuration file for dir: airlock.yaml
// (or airlock.yml) in dir or, as git finds a repository, in the nearest
// directory above it, up to the root of the repository dir is in (the
// nearest directory with .git, which is searched too) or else the root of
// the file system. So a command run in a subdirectory of a project uses the
// project's configuration and state. When there is none, the error wraps
// [fs.ErrNotExist].
//
// A file found above dir must belong to the user running Airlock, or to
// root: a configuration chooses the commands Airlock runs, and a directory
// above, such as /tmp, may let others put one there.
func Find(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("look for %s: %w", FileName, err)
	}
	for d := abs; ; {
		path, err := findIn(d)
		switch {
		case err != nil:
			return "", err
		case path != "" && d != abs:
			return path, checkOwner(path)
		case path != "":
			return path, nil
		}
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			break // the root of the repository
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	return "", &notFoundError{dir: dir}
}

// findIn returns the configuration file in dir, or "" when it has none.
func findIn(dir string) (string, error) {
	var found []string
	for _, name := range []string{FileName, altFileName} {
		p := filepath.Join(dir, name)
		info, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return "", fmt.Errorf("look for %s: %w", name, err)
		case info.IsDir():
			return "", fmt.Errorf("%s is a directory, not a configuration file", p)
		}
		found = append(found, p)
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("both %s and %s are in %s: keep one", FileName, altFileName, dir)
}

// checkOwner refuses a configuration file found above the working
// directory that belongs to another user than the one running Airlock (or
// root).
func checkOwner(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("look for %s: %w", FileName, err)
	}
	uid, ok := fileOwner(info)
	if !ok || uid == 0 || uid == os.Getuid() {
		return nil
	}
	return fmt.Errorf("%s, found above the working directory, belongs to another user (uid %d), and a configuration chooses "+
		"the commands Airlock runs: run airlock where your own airlock.yaml is, or pass the file with --config if you trust it", path, uid)
}

// notFoundError is returned by Find; it matches fs.ErrNotExist without
// adding the generic "file does not exist" to the message.
type notFoundError struct{ dir string }

func (e *notFoundError) Error() string {
	return fmt.Sprintf("no %s in %s or above it; pass --config FILE", FileName, e.dir)
}

func (e *notFoundError) Unwrap() error { return fs.ErrNotExist }

// Load reads and validates the configuration file at path. A file whose name
// ends in .json is read as an mcpServers file (see [ParseMCPServers]); any
// other as airlock.yaml (see [Parse]). Messages name the file as path gives
// it; Config.Path is absolute.
func Load(path string, opts *LoadOptions) (*Config, error) {
	if opts == nil {
		opts = &LoadOptions{}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("read configuration: %w", err)
	}
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(abs)
	var cfg *Config
	if strings.EqualFold(filepath.Ext(path), ".json") {
		cfg, err = ParseMCPServers(data, path, dir, opts.Allow)
	} else {
		if len(opts.Allow) > 0 {
			return nil, fmt.Errorf("--allow applies to an mcpServers JSON file; %s lists its tools under allowed_tools", path)
		}
		cfg, err = Parse(data, path, dir)
	}
	if err != nil {
		return nil, err
	}
	cfg.Path = abs
	return cfg, nil
}

// readFile reads a configuration file of at most maxFileBytes. Unlike
// imports, it may be a pipe, so that --config <(generate) works.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read configuration: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read configuration: %w", err)
	}
	if len(data) > maxFileBytes {
		return nil, tooLarge(path)
	}
	return data, nil
}
