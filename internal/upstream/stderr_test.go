package upstream

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/testenv"
)

func TestStderrLogLimits(t *testing.T) {
	limits := stderrLimits{lines: 10, lineBurst: 20, bytes: 1000, byteBurst: 2000, total: 5000, reportEvery: time.Hour}
	tests := []struct {
		name        string
		lines       int
		size        int           // bytes per line
		every       time.Duration // between lines
		wantLogged  int
		wantDropped string
	}{
		{"a burst within the limits", 20, 10, 0, 20, ""},
		{"a steady trickle", 100, 10, 100 * time.Millisecond, 100, ""},
		{"a flood of lines", 1000, 1, 0, 20, "dropped 980 lines / 980 bytes of stderr from server s"},
		{"a flood of bytes", 100, 500, 0, 4, "dropped 96 lines / 48000 bytes of stderr from server s"},
		{"more than the total", 1000, 100, time.Second, 50, "dropped 950 lines / 95000 bytes of stderr from server s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf testenv.Buffer
			s := newStderrLog(slog.New(slog.NewTextHandler(&buf, nil)), "s", limits)
			now := time.Now()
			for range tt.lines {
				s.line(strings.Repeat("x", tt.size), now)
				now = now.Add(tt.every)
			}
			s.close()
			out := buf.String()
			if got := strings.Count(out, "msg=stderr "); got != tt.wantLogged {
				t.Errorf("logged %d lines, want %d", got, tt.wantLogged)
			}
			if tt.wantDropped == "" && strings.Contains(out, "dropped") {
				t.Errorf("log says lines were dropped:\n%s", out)
			}
			if !strings.Contains(out, tt.wantDropped) {
				t.Errorf("log lacks %q:\n%.2000s", tt.wantDropped, out)
			}
		})
	}
}

func TestStderrLogReportsWhileDropping(t *testing.T) {
	var buf testenv.Buffer
	s := newStderrLog(slog.New(slog.NewTextHandler(&buf, nil)), "s",
		stderrLimits{lines: 1, lineBurst: 1, bytes: 1000, byteBurst: 1000, total: 1 << 20, reportEvery: 50 * time.Millisecond})
	now := time.Now()
	for range 5 {
		s.line("x", now)
	}
	// Nothing more comes; the count is logged all the same.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(buf.String(), "dropped 4 lines / 4 bytes of stderr from server s") {
		if time.Now().After(deadline) {
			t.Fatalf("no report of the dropped lines:\n%s", buf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.close()
	if n := strings.Count(buf.String(), `msg="dropped`); n != 1 {
		t.Errorf("%d reports, want 1:\n%s", n, buf.String())
	}
}
