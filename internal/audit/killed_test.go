package audit_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/sqlite"
)

// envKilledTrail makes the test binary the process TestWriterKilled
// kills: it appends numbered events to the trail at the path it names,
// one every appendEvery, and says each number on stdout once appended.
const envKilledTrail = "AIRLOCK_TEST_KILLED_TRAIL"

const appendEvery = 5 * time.Millisecond

func TestMain(m *testing.M) {
	if path := os.Getenv(envKilledTrail); path != "" {
		appendUntilKilled(path)
		return
	}
	os.Exit(m.Run())
}

func appendUntilKilled(path string) {
	db, err := sqlite.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	w := audit.New(db.Audit(), nil)
	out := bufio.NewWriter(os.Stdout)
	tick := time.NewTicker(appendEvery)
	for i := 0; ; i++ {
		<-tick.C
		w.Append(context.Background(), store.Event{Event: "n", DurationMS: int64(i)})
		fmt.Fprintln(out, i)
		out.Flush()
	}
}

// TestWriterKilled: a process killed outright (SIGKILL) while it appends
// an event every 5 ms loses only what the last linger held: at most 100
// events, which at this pace is half a second, twice the 200 ms linger
// and the write of a batch, for a loaded machine. What is written is the
// first events, in order, with no gap.
func TestWriterKilled(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const kills = 3
	for k := range kills {
		path := filepath.Join(t.TempDir(), "airlock.db")
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), envKilledTrail+"="+path)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stdout)
		appended := -1
		for lines.Scan() {
			n, _ := strconv.Atoi(lines.Text())
			appended = n
			if n == 300+37*k { // a second and a half, at another point of the linger each time
				break
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		for lines.Scan() { // what it appended before the signal landed
			appended, _ = strconv.Atoi(lines.Text())
		}
		cmd.Wait()

		db, err := sqlite.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		events := stored(t, db.Audit())
		db.Close()
		for i, e := range events {
			if e.DurationMS != int64(i) {
				t.Fatalf("kill %d: event %d of the trail is number %d: the trail kept a later event and lost an earlier one", k, i, e.DurationMS)
			}
		}
		lost := appended + 1 - len(events)
		t.Logf("kill %d: %d events appended, %d written, %d lost (%s at one per %s)", k, appended+1, len(events), lost,
			time.Duration(lost)*appendEvery, appendEvery)
		if lost > audit.FlushAt {
			t.Errorf("kill %d: %d of %d events appended were lost, want at most %d", k, lost, appended+1, audit.FlushAt)
		}
	}
}
