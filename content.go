package airlock

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/store"
)

// rendered is a result's content as the model sees it (text, and the
// artifacts binary content went to) and as MCP blocks, for a caller that
// hands the result on (Result.ContentBlocks).
type rendered struct {
	text      string
	blocks    []mcp.Content
	artifacts []Artifact
}

// render turns a result's content blocks into the text a model sees. Text
// is kept as is. Images, audio and embedded resources are neither dropped
// nor inlined as base64: they go to the artifact store and the model gets a
// reference with the artifact's id, media type and size. The blocks are
// kept too, their text scrubbed as the model's text is, and without the
// _meta a server may have added to them.
func (h *Host) render(ctx context.Context, q *request, blocks []mcp.Content) (rendered, error) {
	var (
		parts []string
		out   rendered
	)
	keep := func(kind string, data []byte, mediaType, label string) error {
		a, err := h.artifacts.Put(data, mediaType)
		if err != nil {
			return err
		}
		out.artifacts = append(out.artifacts, Artifact{ID: a.ID, MediaType: a.MediaType, Size: a.Size, Path: a.Path})
		h.audit(ctx, q.event(store.EventArtifactStored, map[string]any{"artifact": a.ID, "media_type": a.MediaType, "size": a.Size}))
		parts = append(parts, fmt.Sprintf("[%s artifact %s: %s, %d bytes%s]", kind, a.ID, a.MediaType, a.Size, label))
		return nil
	}
	for _, b := range blocks {
		var err error
		switch b := b.(type) {
		case *mcp.TextContent:
			text := h.gov.scrub(b.Text)
			parts = append(parts, text)
			out.blocks = append(out.blocks, &mcp.TextContent{Text: text, Annotations: b.Annotations})
		case *mcp.ImageContent:
			err = keep("image", b.Data, b.MIMEType, "")
			out.blocks = append(out.blocks, &mcp.ImageContent{Data: b.Data, MIMEType: b.MIMEType, Annotations: b.Annotations})
		case *mcp.AudioContent:
			err = keep("audio", b.Data, b.MIMEType, "")
			out.blocks = append(out.blocks, &mcp.AudioContent{Data: b.Data, MIMEType: b.MIMEType, Annotations: b.Annotations})
		case *mcp.EmbeddedResource:
			rc := b.Resource
			if rc == nil {
				return rendered{}, fmt.Errorf("embedded resource without contents")
			}
			label := ", " + quoteURI(rc.URI)
			if rc.Blob != nil {
				err = keep("resource", rc.Blob, rc.MIMEType, label)
				out.blocks = append(out.blocks, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
					URI: h.gov.scrub(rc.URI), MIMEType: rc.MIMEType, Blob: rc.Blob}, Annotations: b.Annotations})
			} else {
				mt := rc.MIMEType
				if mt == "" {
					mt = "text/plain"
				}
				text := h.gov.scrub(rc.Text)
				err = keep("resource", []byte(text), mt, label)
				out.blocks = append(out.blocks, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
					URI: h.gov.scrub(rc.URI), MIMEType: rc.MIMEType, Text: text}, Annotations: b.Annotations})
			}
		case *mcp.ResourceLink:
			parts = append(parts, h.gov.scrub(fmt.Sprintf("[resource link %s%s]", quoteURI(b.URI), nameSuffix(b.Name))))
			out.blocks = append(out.blocks, &mcp.ResourceLink{URI: h.gov.scrub(b.URI), Name: h.gov.scrub(b.Name),
				Title: h.gov.scrub(b.Title), Description: h.gov.scrub(b.Description), MIMEType: b.MIMEType,
				Size: b.Size, Icons: b.Icons, Annotations: b.Annotations})
		default:
			return rendered{}, fmt.Errorf("unsupported content type %T", b)
		}
		if err != nil {
			return rendered{}, err
		}
	}
	out.text = strings.Join(parts, "\n")
	return out, nil
}

// quoteURI shows a server-supplied URI in a reference line without letting
// it break the line.
func quoteURI(uri string) string {
	if len(uri) > 512 {
		uri = uri[:512] + "…"
	}
	return fmt.Sprintf("%q", uri)
}

func nameSuffix(name string) string {
	if name == "" {
		return ""
	}
	if len(name) > 128 {
		name = name[:128] + "…"
	}
	return fmt.Sprintf(" (%q)", name)
}
