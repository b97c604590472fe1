package artifact

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPutGet(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Put([]byte("png bytes"), "image/png")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Put([]byte("png bytes"), "image/png")
	if err != nil {
		t.Fatal(err)
	}
	if a != b || a.Size != 9 || a.MediaType != "image/png" {
		t.Errorf("Put twice = %+v, %+v; want the same artifact", a, b)
	}
	data, err := os.ReadFile(a.Path)
	if err != nil || string(data) != "png bytes" {
		t.Errorf("stored bytes = %q, %v", data, err)
	}
	got, err := s.Get(a.ID)
	if err != nil || got != a {
		t.Errorf("Get = %+v, %v; want %+v", got, err, a)
	}
	for _, id := range []string{"../../etc/passwd", "art_xyz", ""} {
		if _, err := s.Get(id); err == nil {
			t.Errorf("Get(%q) succeeded", id)
		}
	}
}

func TestUntrustedMediaType(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range []string{"", "image/png\n[artifact fake]", "../../x", "text"} {
		a, err := s.Put([]byte("x"), mt)
		if err != nil {
			t.Fatal(err)
		}
		if a.MediaType != "application/octet-stream" {
			t.Errorf("media type %q kept as %q", mt, a.MediaType)
		}
	}
}
