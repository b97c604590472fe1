package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"unicode/utf8"
)

// binarySniffBytes is how much of a file is looked at for a NUL byte, the
// mark of a binary file (the rule git and grep use).
const binarySniffBytes = 8 << 10

// isBinary reports whether data has a NUL byte in its first 8 KB.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), binarySniffBytes)], 0) >= 0
}

// readText reads the regular file name (already checked by localPath) and
// returns its text. shown is the path as the client gave it.
func (s *Server) readText(shown, name string) (string, error) {
	// Looking before opening keeps the common case from ever opening a
	// device or FIFO, where open itself can have effects. It is only a
	// shortcut: openRegular checks the opened file again.
	g := s.newGuard()
	real, fi, err := g.resolve(shown, name)
	if err != nil {
		return "", err
	}
	if err := s.checkFile(shown, fi); err != nil {
		return "", err
	}
	if err := g.checkLinked(shown, fi); err != nil {
		return "", err
	}

	f, opened, err := s.openRegular(shown, real)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if !os.SameFile(opened, fi) {
		return "", changed(shown)
	}
	data, err := s.readAll(shown, f)
	if err != nil {
		return "", err
	}
	if isBinary(data) {
		return "", refuse(shown, "is a binary file (it has a NUL byte in its first 8 KB)")
	}
	if !utf8.Valid(data) {
		return "", refuse(shown, "not valid UTF-8 text")
	}
	return string(data), nil
}

// readAll reads f, which openRegular opened, up to the size limit.
func (s *Server) readAll(shown string, f *os.File) ([]byte, error) {
	// The file may grow after the size check; never read past the limit.
	data, err := io.ReadAll(io.LimitReader(f, s.maxFile+1))
	if err != nil {
		s.logger.Warn("workspace: read failed", "path", shown, "error", err)
		return nil, refuse(shown, "cannot be read")
	}
	if int64(len(data)) > s.maxFile {
		return nil, refuse(shown, fmt.Sprintf("larger than %d bytes", s.maxFile))
	}
	return data, nil
}

// openRegular opens name without blocking and checks what was opened, so
// that a file replaced between a check and the open is still judged by
// what is actually read. It returns the opened file's information too.
func (s *Server) openRegular(shown, name string) (*os.File, os.FileInfo, error) {
	f, err := s.root.OpenFile(name, openFlags, 0)
	if err != nil {
		return nil, nil, s.resolveError(shown, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		s.logger.Warn("workspace: stat failed", "path", shown, "error", err)
		return nil, nil, refuse(shown, "cannot be read")
	}
	if err := s.checkFile(shown, fi); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// checkFile refuses anything but a regular file of an acceptable size with
// one link (or several, when the server allows hard links).
func (s *Server) checkFile(shown string, fi os.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return refuse(shown, "not a regular file")
	}
	if err := s.checkLinks(shown, fi); err != nil {
		return err
	}
	if fi.Size() > s.maxFile {
		return refuse(shown, fmt.Sprintf("larger than %d bytes", s.maxFile))
	}
	return nil
}

// checkLinks refuses a file with more than one hard link unless the server
// allows them.
func (s *Server) checkLinks(shown string, fi os.FileInfo) error {
	if !s.allowHardLinks && linkCount(fi) > 1 {
		return refuse(shown, "has more than one hard link, so it may be shared with files outside the workspace")
	}
	return nil
}

// openDir opens the directory name, following the same link rules as every
// other lookup. The name is given a final "." element: os.Root then opens
// every element of name as a directory (O_DIRECTORY), so a FIFO anywhere on
// the way fails at once instead of blocking the open, and what is opened is
// always the directory itself.
func (s *Server) openDir(shown, name string) (*os.File, error) {
	f, err := s.root.Open(dirName(name))
	if err != nil {
		return nil, s.resolveError(shown, err)
	}
	return f, nil
}

// readDirBatches reads the directory f readDirBatch entries at a time, so
// that a huge directory never sits in memory whole, and hands each batch to
// add until add returns false. It returns the error of a failed read, or
// ctx's error when ctx is done between batches (see canceled).
func readDirBatches(ctx context.Context, f *os.File, add func([]fs.DirEntry) bool) error {
	for {
		batch, err := f.ReadDir(readDirBatch)
		if !add(batch) || errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// canceled reports whether err is a call's context being done, which ends
// the call, rather than a problem to report to the model.
func canceled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func dirName(name string) string {
	if name == "." {
		return name
	}
	return name + string(filepath.Separator) + "."
}
