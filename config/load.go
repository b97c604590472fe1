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

// Find returns the path of the configuration file in dir: airlock.yaml, or
// airlock.yml. When there is none, the error wraps [fs.ErrNotExist].
func Find(dir string) (string, error) {
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
		return "", &notFoundError{dir: dir}
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("both %s and %s are in %s: keep one", FileName, altFileName, dir)
}

// notFoundError is returned by Find; it matches fs.ErrNotExist without
// adding the generic "file does not exist" to the message.
type notFoundError struct{ dir string }

func (e *notFoundError) Error() string {
	return fmt.Sprintf("no %s in %s; pass --config FILE", FileName, e.dir)
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
