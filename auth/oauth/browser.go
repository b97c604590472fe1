package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"github.com/airlockhq/airlock/auth/egress"
)

// CheckBrowserURL accepts a URL for a person's browser only if it is https,
// or plain http to a loopback host, and has no user information: anything
// else (javascript:, file:, a command line) is refused.
func CheckBrowserURL(raw string) error {
	u, err := urlParse(raw)
	if err != nil {
		return errors.New("the authorization URL cannot be parsed")
	}
	switch {
	case u.User != nil || u.Host == "":
		return errors.New("the authorization URL must be an absolute URL without user information")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && egress.IsLoopbackHost(u.Hostname()):
		return nil
	}
	return errors.New("the authorization URL must use https (or http to a loopback address)")
}

// Opener returns an [Options.Open] function that writes the authorization
// URL to w and, unless noBrowser, starts a browser on it: the first command
// of $BROWSER (a colon-separated list; "%s" in it stands for the URL),
// else xdg-open, open or the Windows URL handler. The URL is passed as one
// argument, never through a shell. A missing browser is not an error: the
// URL was printed. The browser is not stopped when the login ends.
func Opener(w io.Writer, noBrowser bool) func(ctx context.Context, authURL string) error {
	return func(ctx context.Context, authURL string) error {
		if err := CheckBrowserURL(authURL); err != nil {
			return err
		}
		fmt.Fprintf(w, "Open this URL in a browser to log in:\n\n  %s\n\n", authURL)
		if noBrowser {
			return nil
		}
		argv := browserCommand(os.Getenv("BROWSER"), authURL)
		if argv == nil {
			return nil
		}
		path, err := exec.LookPath(argv[0])
		if err != nil {
			return nil
		}
		cmd := exec.Command(path, argv[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
		if err := cmd.Start(); err != nil {
			return nil
		}
		// Reap the opener when it exits; it is deliberately not tied to
		// ctx, so that the browser outlives the login.
		go cmd.Wait()
		return nil
	}
}

// browserCommand returns the command line that opens url.
func browserCommand(browserEnv, url string) []string {
	if browserEnv != "" {
		first, _, _ := strings.Cut(browserEnv, ":")
		fields := strings.Fields(first)
		if len(fields) == 0 {
			return nil
		}
		replaced := false
		for i, f := range fields[1:] {
			if strings.Contains(f, "%s") {
				fields[i+1] = strings.ReplaceAll(f, "%s", url)
				replaced = true
			}
		}
		if !replaced {
			fields = append(fields, url)
		}
		return fields
	}
	switch runtime.GOOS {
	case "darwin":
		return []string{"open", url}
	case "windows":
		return []string{"rundll32", "url.dll,FileProtocolHandler", url}
	default:
		return []string{"xdg-open", url}
	}
}
