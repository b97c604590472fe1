package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"

	"github.com/airlockhq/airlock/config"
)

// The bundled workspace server as the host sees it: which directory the
// built-in default may serve, and which of Airlock's own files the host
// tells every workspace server to keep from the model.

// protectEnv carries, from the host to a bundled workspace server it
// starts, the paths of Airlock's own files that the server must refuse
// besides .airlock, airlock.yaml and airlock.yml: a JSON array of
// absolute paths (JSON, so that no path needs escaping).
const protectEnv = "AIRLOCK_WORKSPACE_PROTECT"

// pathsFlag collects one path per use of a repeatable flag. Unlike
// listFlag it never splits: a path may hold a comma.
type pathsFlag []string

func (p *pathsFlag) String() string { return strings.Join(*p, ",") }

func (p *pathsFlag) Set(v string) error {
	if v == "" {
		return errors.New("empty path")
	}
	*p = append(*p, v)
	return nil
}

// isBundledWorkspace reports whether srv runs the workspace server bundled
// in this binary ("airlock" is the running binary; see internal/upstream).
func isBundledWorkspace(srv *config.Server) bool {
	return srv.Command == "airlock" && len(srv.Args) >= 2 && srv.Args[0] == "server" && srv.Args[1] == "workspace"
}

// protectOwnFiles returns cfg with every bundled workspace server told to
// protect the state directory and the configuration's files (ownFiles),
// or cfg itself when it has no such server. The configuration is
// never changed in place: the servers are copied.
func protectOwnFiles(cfg *config.Config, state string) (*config.Config, error) {
	paths, err := ownFiles(cfg, state)
	if err != nil {
		return nil, err
	}
	var out *config.Config
	for i := range cfg.Servers {
		srv := &cfg.Servers[i]
		if !isBundledWorkspace(srv) {
			continue
		}
		if out == nil {
			c := *cfg
			c.Servers = slices.Clone(cfg.Servers)
			out = &c
		}
		// The paths go in HostEnv, not Env: they depend on this host's
		// state directory, which an approval of the server's calls must
		// not (replicas keep theirs in different places).
		env := maps.Clone(srv.HostEnv)
		if env == nil {
			env = map[string]string{}
		}
		// Paths the configuration itself gives the server are kept.
		all := paths
		if v, ok := srv.Env[protectEnv]; ok {
			var given []string
			if err := json.Unmarshal([]byte(v), &given); err != nil {
				return nil, usageError("%s: env %s: not a JSON array of paths: %v", srv.Source, protectEnv, err)
			}
			all = append(given, paths...)
		}
		b, err := json.Marshal(all)
		if err != nil {
			return nil, err
		}
		env[protectEnv] = string(b)
		out.Servers[i].HostEnv = env
	}
	if out == nil {
		return cfg, nil
	}
	return out, nil
}

// ownFiles lists, as absolute paths, what a workspace server must keep
// from the model: the state directory, and the files whose content steers
// what Airlock does (none for the built-in default): the configuration,
// the mcpServers files it imports, the Cedar policies, the hook programs
// given as paths, and the CA files of remote servers. A model that could
// rewrite one of them would choose the commands Airlock runs or the
// policy it applies.
func ownFiles(cfg *config.Config, state string) ([]string, error) {
	abs, err := filepath.Abs(state)
	if err != nil {
		return nil, usageError("cannot resolve the state directory %s: %v", state, err)
	}
	paths := []string{abs}
	if cfg.Path == "" {
		return paths, nil
	}
	add := func(file, dir string) {
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		if file = filepath.Clean(file); !slices.Contains(paths, file) {
			paths = append(paths, file)
		}
	}
	add(cfg.Path, "")
	// The configuration names the files it imports only in its servers'
	// Source ("file:line", the file as reached from the working directory).
	wd, err := os.Getwd()
	if err != nil {
		return nil, usageError("cannot determine the working directory: %v", err)
	}
	for _, srv := range cfg.Servers {
		if i := strings.LastIndexByte(srv.Source, ':'); i > 0 {
			add(srv.Source[:i], wd)
		}
		if srv.CAFile != "" {
			add(srv.CAFile, cfg.Dir)
		}
	}
	if cfg.Policy.Cedar != "" {
		add(cfg.Policy.Cedar, cfg.Dir)
	}
	for _, h := range cfg.Policy.Hooks {
		// A program named without a separator is looked up in PATH, out
		// of the workspace's reach; one with a separator runs from the
		// configuration's directory.
		if len(h.Command) > 0 && strings.ContainsRune(h.Command[0], filepath.Separator) {
			add(h.Command[0], cfg.Dir)
		}
	}
	return paths, nil
}

// protectedPaths returns the paths a workspace server protects: those of
// --protect and those the host set in protectEnv.
func protectedPaths(flags []string) ([]string, error) {
	paths := slices.Clone(flags)
	if v := os.Getenv(protectEnv); v != "" {
		var fromHost []string
		if err := json.Unmarshal([]byte(v), &fromHost); err != nil {
			return nil, usageError("%s: not a JSON array of paths: %v", protectEnv, err)
		}
		paths = append(paths, fromHost...)
	}
	return paths, nil
}

// checkDefaultRoot refuses to let the built-in default serve dir, the
// working directory, unless it is a project: a directory with .git or an
// airlock.yaml in it or above it, below the home directory. The home
// directory, a directory that contains it, and / are never served this
// way: a model would read ~/.ssh and every other project.
func checkDefaultRoot(dir string) error {
	why := rootProblem(dir)
	if why == "" && !isProject(dir) {
		why = "is not a project (it has no .git or airlock.yaml, nor has a directory above it)"
	}
	if why == "" {
		return nil
	}
	return usageError("refusing to serve %s with the built-in default: it %s. Run airlock in a project directory "+
		"(one with .git or an airlock.yaml, in it or above it), or choose the directory in an airlock.yaml "+
		"(command: airlock, args: [server, workspace, --root, DIR]) and pass it with --config", dir, why)
}

// checkImplicitRoot refuses to let `airlock server workspace` serve dir,
// the working directory it was started in without --root, when dir is the
// home directory, contains it, or is /: MCP clients often start servers
// there.
func checkImplicitRoot(dir string) error {
	if why := rootProblem(dir); why != "" {
		return usageError("refusing to serve %s, the working directory: it %s. Choose the directory to serve with --root DIR", dir, why)
	}
	return nil
}

// rootProblem says why dir must never be served unless chosen explicitly,
// or returns "": it is /, the home directory ($HOME or the account's), or
// contains the account's home directory. $HOME is only compared for
// equality: a server the host starts has a private $HOME inside the state
// directory, which contains nothing of the person's.
func rootProblem(dir string) string {
	real := resolved(dir)
	if filepath.Dir(real) == real {
		return "is the root of the file system"
	}
	env, account := homeDirs()
	if slices.Contains(env, real) {
		return "is your home directory"
	}
	for _, home := range account {
		switch rel, err := filepath.Rel(real, home); {
		case err != nil:
		case rel == ".":
			return "is your home directory"
		case filepath.IsLocal(rel):
			return "contains your home directory"
		}
	}
	return ""
}

// isProject reports whether dir, or a directory above it, has .git (a
// directory, or the file of a worktree) or airlock.yaml/airlock.yml. The
// search stops below the home directory and the root of the file system,
// so that a dotfiles repository in $HOME makes no project of every
// directory under it.
func isProject(dir string) bool {
	env, account := homeDirs()
	homes := append(env, account...)
	for d := resolved(dir); ; {
		parent := filepath.Dir(d)
		if parent == d || slices.Contains(homes, d) {
			return false
		}
		for _, marker := range []string{".git", config.FileName, "airlock.yml"} {
			if _, err := os.Lstat(filepath.Join(d, marker)); err == nil {
				return true
			} else if !errors.Is(err, fs.ErrNotExist) {
				// Unreadable: not known to be a project.
				return false
			}
		}
		d = parent
	}
}

// homeDirs returns, resolved, the home directory $HOME names and the
// account's home directory (nil when it is unknown).
func homeDirs() (env, account []string) {
	add := func(list []string, h string) []string {
		if h == "" || !filepath.IsAbs(h) {
			return list
		}
		return append(list, resolved(h))
	}
	if h, err := os.UserHomeDir(); err == nil {
		env = add(env, h)
	}
	if u, err := user.Current(); err == nil {
		account = add(account, u.HomeDir)
	}
	return env, account
}

// resolved returns dir, absolute and with its symbolic links resolved when
// that is possible.
func resolved(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	return filepath.Clean(dir)
}
