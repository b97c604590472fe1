package airlock_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/testenv"
)

// TestServerEverythingResources reads the TypeScript reference server's
// resources, templates, prompts, completions and subscriptions through
// the host (2025-11-25: the TypeScript SDK speaks no later version).
func TestServerEverythingResources(t *testing.T) {
	node, script := testenv.EverythingServer(t)
	srv := everythingStdio(t, node, script, "toggle-subscriber-updates")
	srv.AllowedResources = []string{"demo://resource/static/document/*", "demo://resource/dynamic/**"}
	srv.AllowedPrompts = []string{"*"}
	updates := make(chan airlock.ResourceUpdate, 16)
	h := openWith(t, newConfig(t, srv), &airlock.Options{ResourceUpdated: func(u airlock.ResourceUpdate) {
		select {
		case updates <- u:
		default:
		}
	}})
	snap := h.Snapshot()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var doc string
	for _, r := range snap.Resources() {
		if !strings.HasPrefix(r.URI, "demo://resource/static/document/") {
			t.Errorf("resource %s is listed, but allowed_resources does not match it", r.URI)
		}
		if strings.HasSuffix(r.URI, ".md") && doc == "" {
			doc = r.URI
		}
	}
	if doc == "" {
		t.Fatalf("no markdown document among %+v", snap.Resources())
	}
	templates := map[string]bool{}
	for _, tm := range snap.ResourceTemplates() {
		templates[tm.URITemplate] = true
	}
	if !templates["demo://resource/dynamic/text/{resourceId}"] || !templates["demo://resource/dynamic/blob/{resourceId}"] {
		t.Errorf("templates = %v", templates)
	}

	r := h.ReadResource(ctx, snap, airlock.Read{URI: doc})
	wantStatus(t, r, airlock.OK)
	if len(r.Contents) != 1 || r.Contents[0].Text == "" || r.Contents[0].MIMEType != "text/markdown" {
		t.Errorf("read %s = %+v", doc, r.Contents)
	}
	r = h.ReadResource(ctx, snap, airlock.Read{URI: "demo://resource/dynamic/text/3"})
	wantStatus(t, r, airlock.OK)
	if !strings.HasPrefix(r.Contents[0].Text, "Resource 3:") {
		t.Errorf("template read = %+v", r.Contents)
	}
	r = h.ReadResource(ctx, snap, airlock.Read{URI: "demo://resource/dynamic/blob/4"})
	wantStatus(t, r, airlock.OK)
	if a := r.Contents[0].Artifact; a == nil {
		t.Errorf("blob read = %+v, want an artifact", r.Contents)
	} else if data, err := os.ReadFile(a.Path); err != nil || !strings.HasPrefix(string(data), "Resource 4: This is a base64 blob") {
		t.Errorf("the blob's artifact holds %q (%v)", data, err)
	}

	r = h.GetPrompt(ctx, snap, airlock.PromptGet{Name: "everything__args-prompt", Arguments: []byte(`{"city":"Lisbon","state":"Lx"}`)})
	wantStatus(t, r, airlock.OK)
	if len(r.Messages) == 0 || !strings.Contains(r.Messages[0].Content, "Lisbon, Lx") {
		t.Errorf("args-prompt = %+v", r.Messages)
	}
	r = h.GetPrompt(ctx, snap, airlock.PromptGet{Name: "everything__args-prompt", Arguments: []byte(`{"state":"Lx"}`)})
	wantStatus(t, r, airlock.InvalidArguments)
	r = h.GetPrompt(ctx, snap, airlock.PromptGet{Name: "everything__resource-prompt", Arguments: []byte(`{"resourceType":"Blob","resourceId":"2"}`)})
	wantStatus(t, r, airlock.OK)
	if len(r.Artifacts) == 0 {
		t.Errorf("resource-prompt = %+v: want its embedded resource in the artifact store", r.Messages)
	}

	c, err := h.Complete(ctx, snap, airlock.CompleteRequest{Prompt: "everything__completable-prompt", Argument: "department", Value: "E"})
	if err != nil || strings.Join(c.Values, ",") != "Engineering" {
		t.Errorf("complete department = %+v %v", c, err)
	}
	c, err = h.Complete(ctx, snap, airlock.CompleteRequest{Prompt: "everything__completable-prompt", Argument: "name", Value: "",
		Context: map[string]string{"department": "Sales"}})
	if err != nil || strings.Join(c.Values, ",") != "David,Eve,Frank" {
		t.Errorf("complete name in Sales = %+v %v", c, err)
	}

	if err := h.Subscribe(ctx, snap, airlock.Read{URI: doc}); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, call(t, h, "everything__toggle-subscriber-updates", `{}`), airlock.OK)
	select {
	case u := <-updates:
		if u.URI != doc || u.Server != "everything" {
			t.Errorf("update = %+v, want %s", u, doc)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no resource update within 30s (the server sends one every 5s)")
	}
}

// TestGoSDKEverythingResources: the go-sdk's conformance server, in both
// eras.
func TestGoSDKEverythingResources(t *testing.T) {
	bin := testenv.GoSDKEverythingServer(t)
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			srv := config.Server{ID: "gosdk", Transport: "stdio", Scope: "host", Command: bin, Cwd: t.TempDir(),
				AllowedTools: []string{"test_simple_text"}, AllowedResources: []string{"test://**"}, AllowedPrompts: []string{"*"},
				ProtocolVersions: []string{version}, RequestTimeout: 30 * time.Second, ConnectTimeout: 30 * time.Second,
				ProbeTimeout: 5 * time.Second}
			h := open(t, newConfig(t, srv))
			snap := h.Snapshot()
			ctx := context.Background()
			r := h.ReadResource(ctx, snap, airlock.Read{URI: "test://static-text"})
			wantStatus(t, r, airlock.OK)
			if r.Contents[0].Text != "This is the content of the static text resource." {
				t.Errorf("static text = %+v", r.Contents)
			}
			r = h.ReadResource(ctx, snap, airlock.Read{URI: "test://static-binary"})
			wantStatus(t, r, airlock.OK)
			if a := r.Contents[0].Artifact; a == nil || a.MediaType != "image/png" {
				t.Errorf("static binary = %+v", r.Contents)
			}
			r = h.ReadResource(ctx, snap, airlock.Read{URI: "test://template/7/data"})
			wantStatus(t, r, airlock.OK)
			if !strings.Contains(r.Contents[0].Text, "7") {
				t.Errorf("template = %+v", r.Contents)
			}
			r = h.GetPrompt(ctx, snap, airlock.PromptGet{Name: "gosdk__test_prompt_with_arguments", Arguments: []byte(`{"arg1":"one","arg2":"two"}`)})
			wantStatus(t, r, airlock.OK)
			if len(r.Messages) == 0 || !strings.Contains(r.Messages[0].Content, "one") {
				t.Errorf("prompt = %+v", r.Messages)
			}
			r = h.GetPrompt(ctx, snap, airlock.PromptGet{Name: "gosdk__test_prompt_with_image"})
			wantStatus(t, r, airlock.OK)
			if len(r.Artifacts) != 1 || r.Artifacts[0].MediaType != "image/png" {
				t.Errorf("image prompt artifacts = %+v", r.Artifacts)
			}
			r = h.GetPrompt(ctx, snap, airlock.PromptGet{Name: "gosdk__test_prompt_with_embedded_resource", Arguments: []byte(`{"resourceUri":"test://x"}`)})
			wantStatus(t, r, airlock.OK)
		})
	}
}
