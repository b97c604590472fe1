package sqlite

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/airlockhq/airlock/store"
)

// An intentLog is what makes a writer's intents durable: an append-only
// log of checksummed records in a file of its own, beside its lock file,
// each written with O_DSYNC (or synced with fdatasync) before Begin or
// BeginLater returns. The intent's row goes to the database beside it or
// after it, without a sync of its own (to the WAL); the database's WAL is
// synced within relaxedSync of a commit, and before the log is reused. So
// the log holds, at all times, every intent whose row a crash could still
// take from the database (or that was not written yet), and recovery puts
// such rows back (replayLogs) before it marks a dead writer's open intents
// unknown.
//
// One sync of a small record in a file whose blocks already exist is the
// least a durable write costs: the file is preallocated with zeros when it
// is made, so that a sync writes the records' blocks and no metadata, and
// appends that arrive while a sync is under way are written together and
// synced once (group commit), as the committer does for the database.
//
// A record is a 16-byte header, then its payload, a JSON logEntry:
//
//	0  uint32 the payload's length, little-endian
//	4  uint32 CRC-32C of the sequence number's 8 bytes and the payload
//	8  uint64 the sequence number, one more than the record before it
//	16 the payload
//
// Records follow each other from the start of the file. When one no longer
// fits, the log starts again at the start of the file, once every row its
// records stand for is committed and the WAL synced: nothing in it is
// needed any more. Reading stops at the first record that is cut short,
// whose checksum does not match, or whose sequence number does not follow:
// a write torn by a crash, or what is left of an earlier pass.
type intentLog struct {
	f    *os.File
	path string
	// cover makes every row the database has committed so far durable
	// (the committer's WAL sync): the log's records are then no longer
	// needed.
	cover func() error
	// flush has the database commit, without waiting for more, the rows
	// queued for the log's records.
	flush func()

	mu      sync.Mutex
	settled sync.Cond // broadcast when open falls
	busy    bool      // a group is being written
	queue   []*logAppend
	// open counts the records written in this pass whose Begin has not
	// settled (its row committed, or refused): the pass cannot be
	// reused before they are.
	open int
	// broken is the error of a write or sync that failed (after a failed
	// sync the file's state is not known), or of a row that could not be
	// committed for a record the log must then keep (fail): every append
	// fails after it.
	broken error
	// unwritten are intents whose records the log holds and whose rows
	// the database refused (a full disk, a lock held too long): their
	// calls may have gone out. Their records stay open (unsettled) until
	// putBackRows writes the rows; until then no intent is begun.
	unwritten []unwrittenRow
	// putting lets one putBackRows at a time write them, so that two
	// Begins do not both count them settled.
	putting sync.Mutex

	// The group's writer alone uses these while busy.
	size int64  // the file's preallocated size
	off  int64  // where the next record goes
	seq  uint64 // the next record's sequence number
	buf  []byte // the group's records
}

// An unwrittenRow is an intent whose row the database refused, with
// the writer that began it and why.
type unwrittenRow struct {
	in     store.Intent
	writer string
	err    error
}

// rowFailed notes that the row of in, whose record the log holds, could
// not be committed: its record stays open until putBackRows writes it.
func (l *intentLog) rowFailed(in store.Intent, writer string, err error) {
	l.mu.Lock()
	l.unwritten = append(l.unwritten, unwrittenRow{in: in, writer: writer, err: err})
	l.settled.Broadcast() // a restart waiting for open records stops waiting
	l.mu.Unlock()
}

// putBackRows writes the rows the database refused earlier (rowFailed),
// with insert, and settles their records; its error, if the database
// still refuses them, says that no intent may be begun.
func (l *intentLog) putBackRows(insert func([]unwrittenRow) error) error {
	l.mu.Lock()
	none := len(l.unwritten) == 0
	l.mu.Unlock()
	if none {
		return nil
	}
	l.putting.Lock()
	defer l.putting.Unlock()
	l.mu.Lock()
	rows := l.unwritten
	l.mu.Unlock()
	if len(rows) == 0 {
		return nil // another Begin wrote them meanwhile
	}
	if err := insert(rows); err != nil {
		return fmt.Errorf("the journal could not write intent %s, whose call may have been sent (%w), and still cannot (%v): journaled calls are refused until it can", rows[0].in.ID, rows[0].err, err)
	}
	l.mu.Lock()
	l.unwritten = l.unwritten[len(rows):]
	l.open -= len(rows)
	l.settled.Broadcast()
	l.mu.Unlock()
	return nil
}

// keep reports whether the log holds records whose rows the database does
// not have, which the next start must put back: it must not be removed.
func (l *intentLog) keep() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.broken != nil || len(l.unwritten) > 0
}

// A logEntry is a record's payload: an intent, or the void of one whose
// Begin failed after its record was written (the id was taken), which
// recovery must not put back.
type logEntry struct {
	Intent *store.Intent `json:"intent,omitempty"`
	Void   string        `json:"void,omitempty"`
}

// A logAppend is a record waiting in the queue for its group's write.
type logAppend struct {
	rec  []byte
	err  error
	done chan struct{} // closed once the record is synced, or has failed
	lead chan struct{} // told when this append is to write the next group
}

const (
	logHeader = 16
	// maxLogGroup bounds the records of one write.
	maxLogGroup = 512
)

// logSize is the size of a new log file: about ten thousand intents of
// ordinary size before it starts again. A variable for the tests.
var logSize int64 = 4 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// logFileRE matches the name of a writer's log file in the writers'
// directory: its id, then ".intents".
var logFileRE = regexp.MustCompile(`^([0-9a-f]{26})\.intents$`)

// logPath is the path of the log of the writer with the given id.
func logPath(dir, id string) string { return filepath.Join(dir, id+".intents") }

// createLog makes the log file of a new writer, preallocated, and syncs it
// and its directory, so that the file and its blocks are on disk before
// the first record relies on them.
func createLog(dir, id string, cover func() error, flush func()) (*intentLog, error) {
	path := logPath(dir, id)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	l := &intentLog{f: f, path: path, cover: cover, flush: flush, seq: 1}
	l.settled.L = &l.mu
	err = l.grow(logSize)
	if err == nil {
		err = syncDir(dir)
	}
	if err == nil {
		// Opened again to write records synced as they are written
		// (logSync), once the zeros are on disk.
		f.Close()
		l.f, err = os.OpenFile(path, os.O_RDWR|logSync, 0)
	}
	if err != nil {
		l.f.Close()
		os.Remove(path)
		return nil, err
	}
	return l, nil
}

// grow extends the file with zeros to size bytes and syncs it, metadata
// included.
func (l *intentLog) grow(size int64) error {
	zeros := make([]byte, 64<<10)
	for at := l.size; at < size; {
		n := min(int64(len(zeros)), size-at)
		if _, err := l.f.WriteAt(zeros[:n], at); err != nil {
			return err
		}
		at += n
	}
	if err := l.f.Sync(); err != nil {
		return err
	}
	l.size = max(l.size, size)
	return nil
}

// close closes the file and removes it. The caller has made every row
// the log stands for durable first.
func (l *intentLog) close() {
	l.f.Close()
	os.Remove(l.path)
}

// appendIntent writes in to the log and returns once it is synced. Its
// Begin must call settle once its row is committed or refused, if
// appendIntent returned nil.
func (l *intentLog) appendIntent(in store.Intent) error {
	return l.append(logEntry{Intent: &in})
}

// void writes that the intent with the given id, whose record is in the
// log, must not be put back: its Begin failed.
func (l *intentLog) void(id string) error {
	if err := l.append(logEntry{Void: id}); err != nil {
		return err
	}
	l.settle()
	return nil
}

// settle notes that a record's Begin has settled.
func (l *intentLog) settle() {
	l.mu.Lock()
	l.open--
	l.settled.Broadcast()
	l.mu.Unlock()
}

func (l *intentLog) append(e logEntry) error {
	rec, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("cannot encode the intent for its log: %w", err)
	}
	p := &logAppend{rec: rec, done: make(chan struct{}), lead: make(chan struct{}, 1)}
	l.mu.Lock()
	l.queue = append(l.queue, p)
	if l.busy {
		l.mu.Unlock()
		select {
		case <-p.done:
			return p.err
		case <-p.lead:
		}
	} else {
		l.busy = true
		l.mu.Unlock()
	}

	// p is at the head of the queue: write the group, and hand the queue
	// to the next append that arrived meanwhile.
	l.mu.Lock()
	n := min(len(l.queue), maxLogGroup)
	group := l.queue[:n:n]
	l.queue = l.queue[n:]
	l.mu.Unlock()
	err = l.write(group)
	l.mu.Lock()
	if err == nil {
		l.open += len(group)
	}
	if len(l.queue) > 0 {
		l.queue[0].lead <- struct{}{}
	} else {
		l.busy = false
		l.queue = nil
	}
	l.mu.Unlock()
	for _, q := range group {
		q.err = err
		close(q.done)
	}
	return err
}

// write writes a group's records at the log's end, starting the log again
// first if they do not fit, and syncs them.
func (l *intentLog) write(group []*logAppend) error {
	if err := l.failed(); err != nil {
		return err
	}
	l.buf = l.buf[:0]
	for _, p := range group {
		l.buf = binary.LittleEndian.AppendUint32(l.buf, uint32(len(p.rec)))
		crc := crc32.Update(crc32.Checksum(binary.LittleEndian.AppendUint64(nil, l.seq), castagnoli), castagnoli, p.rec)
		l.buf = binary.LittleEndian.AppendUint32(l.buf, crc)
		l.buf = binary.LittleEndian.AppendUint64(l.buf, l.seq)
		l.buf = append(l.buf, p.rec...)
		l.seq++
	}
	if l.off+int64(len(l.buf)) > l.size {
		if err := l.restart(int64(len(l.buf))); err != nil {
			l.seq -= uint64(len(group))
			return fmt.Errorf("cannot start the intent log again: %w", err)
		}
	}
	if _, err := l.f.WriteAt(l.buf, l.off); err != nil {
		return l.fail(fmt.Errorf("the intent log cannot be written: %w", err))
	}
	if err := datasync(l.f); err != nil {
		return l.fail(fmt.Errorf("the intent log cannot be synced: %w", err))
	}
	l.off += int64(len(l.buf))
	if cap(l.buf) > 1<<20 {
		l.buf = nil // a rare large group: let it go
	}
	return nil
}

// fail stops the log for good: every append after it fails with err (the
// first error it was given). It returns that error.
func (l *intentLog) fail(err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken == nil {
		l.broken = err
	}
	return l.broken
}

// failed returns the error that stopped the log, if one did.
func (l *intentLog) failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.broken
}

// restart makes room for need bytes at the start of the log: once every
// record written in this pass has settled, and the database has made their
// rows durable, the log begins again at its start (grown first if need is
// more than it holds).
func (l *intentLog) restart(need int64) error {
	l.mu.Lock()
	if l.open > 0 {
		l.mu.Unlock()
		l.flush() // rows need not wait for more
		l.mu.Lock()
	}
	for l.open > 0 {
		if len(l.unwritten) > 0 {
			l.mu.Unlock()
			return errors.New("the journal holds intents whose rows the database refused")
		}
		l.settled.Wait()
	}
	l.mu.Unlock()
	if err := l.cover(); err != nil {
		return err
	}
	if need > l.size {
		if err := l.grow(need + need/2); err != nil {
			return err
		}
	}
	l.off = 0
	return nil
}

// readLog reads a log's records: the intents to put back, in the order
// they were written, less those voided after them.
func readLog(path string) ([]store.Intent, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []store.Intent
	var seq uint64
	for off := 0; off+logHeader <= len(data); {
		n := int(binary.LittleEndian.Uint32(data[off:]))
		sum := binary.LittleEndian.Uint32(data[off+4:])
		s := binary.LittleEndian.Uint64(data[off+8:])
		if n == 0 || n > len(data)-off-logHeader || (seq != 0 && s != seq+1) {
			break
		}
		rec := data[off+logHeader : off+logHeader+n]
		if crc32.Update(crc32.Checksum(data[off+8:off+16], castagnoli), castagnoli, rec) != sum {
			break
		}
		var e logEntry
		if err := json.Unmarshal(rec, &e); err != nil {
			break // cannot be: the checksum matched what was written
		}
		switch {
		case e.Intent != nil:
			out = append(out, *e.Intent)
		case e.Void != "":
			for i := len(out) - 1; i >= 0; i-- {
				if out[i].ID == e.Void {
					out = append(out[:i], out[i+1:]...)
					break
				}
			}
		}
		seq = s
		off += logHeader + n
	}
	return out, nil
}

// syncDir syncs a directory, so that the names made in it are on disk.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, fs.ErrInvalid) {
		return err
	}
	return nil
}
