package redact

import (
	"bytes"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	const secret = "s3cr3t-v4lue-xyz"
	canaries := []string{secret, githubClassic, jwt, awsKeyID, "hunter2", bearer, "pr1vate-cookie"}
	for _, mk := range []struct {
		name string
		new  func(*bytes.Buffer) slog.Handler
	}{
		{"json", func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) }},
		{"text", func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) }},
	} {
		t.Run(mk.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(NewHandler(mk.new(&buf), New([]string{secret})))
			u, _ := url.Parse("https://bob:hunter2@example.com/x")
			log = log.With("server", "fs", "env", map[string]string{"API": secret})
			log.Info("calling with "+githubClassic,
				"args", map[string]any{"path": "a.txt", "token": "plain"},
				"err", errors.New("upstream said: Authorization: Bearer "+bearer),
				"url", u,
				"header", "Bearer "+jwt,
				"password", "hunter2",
				"raw", []byte("key "+awsKeyID),
				slog.Group("req", "cookie", "pr1vate-cookie", "n", 3),
				"count", 7,
			)
			log.WithGroup("g").Warn("done", "v", secret)
			out := buf.String()
			for _, c := range canaries {
				if strings.Contains(out, c) {
					t.Errorf("log output holds %q:\n%s", c, out)
				}
			}
			for _, keep := range []string{"a.txt", "example.com", "fs", "count", "7", "REDACTED:secret", "REDACTED:github_token"} {
				if !strings.Contains(out, keep) {
					t.Errorf("log output lost %q:\n%s", keep, out)
				}
			}
		})
	}
}
