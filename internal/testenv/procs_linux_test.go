package testenv

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestProcsInGroup(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer cmd.Wait()
	defer cmd.Process.Kill()

	check := func(when string, want []int) {
		t.Helper()
		got, err := ProcsInGroup(pid)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: ProcsInGroup(%d) (-want +got):\n%s", when, pid, diff)
		}
	}

	check("running", []int{pid})

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Wait for the exit without reaping, so that the process is still in the
	// group as a zombie: ProcsInGroup must leave it out.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	if st := readStat(t, pid); st.state != 'Z' || st.pgrp != pid {
		t.Fatalf("after kill, /proc/%d/stat has state %q and group %d, want a zombie in group %d", pid, st.state, st.pgrp, pid)
	}
	check("zombie", nil)

	cmd.Wait()
	check("reaped", nil)
}

func TestProcsInGroupOwnGroup(t *testing.T) {
	got, err := ProcsInGroup(syscall.Getpgrp())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, os.Getpid()) {
		t.Errorf("ProcsInGroup(own group %d) = %v, want it to contain this process %d", syscall.Getpgrp(), got, os.Getpid())
	}
}

func readStat(t *testing.T, pid int) procStat {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	st, err := parseStat(data)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    procStat
		wantErr bool
	}{
		{
			name: "sleep",
			stat: "4242 (sleep) S 4200 4242 4200 0 -1 4194304 95 0 0 0 0 0 0 0 20 0 1 0 1 2 3\n",
			want: procStat{state: 'S', pgrp: 4242},
		},
		{
			name: "zombie",
			stat: "4243 (node) Z 1 4240 4240 0 -1",
			want: procStat{state: 'Z', pgrp: 4240},
		},
		{
			name: "command with spaces and parentheses",
			stat: "7 (a) b (c)) R 1 77 77 0",
			want: procStat{state: 'R', pgrp: 77},
		},
		{name: "no command", stat: "7 R 1 77", wantErr: true},
		{name: "too few fields", stat: "7 (x) R 1", wantErr: true},
		{name: "long state", stat: "7 (x) RS 1 77", wantErr: true},
		{name: "bad group", stat: "7 (x) R 1 seven", wantErr: true},
		{name: "empty", stat: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat([]byte(tt.stat))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseStat(%q) error = %v, want error: %t", tt.stat, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("parseStat(%q) = %+v, want %+v", tt.stat, got, tt.want)
			}
		})
	}
}
