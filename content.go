package airlock

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/store"
)

// render turns a result's content blocks into the text a model sees. Text
// is kept as is. Images, audio and embedded resources are neither dropped
// nor inlined as base64: they go to the artifact store and the model gets a
// reference with the artifact's id, media type and size.
func (h *Host) render(ctx context.Context, q *request, blocks []mcp.Content) (string, []Artifact, error) {
	var (
		parts     []string
		artifacts []Artifact
	)
	keep := func(kind string, data []byte, mediaType, label string) error {
		a, err := h.artifacts.Put(data, mediaType)
		if err != nil {
			return err
		}
		artifacts = append(artifacts, Artifact{ID: a.ID, MediaType: a.MediaType, Size: a.Size, Path: a.Path})
		h.audit(ctx, q.event(store.EventArtifactStored, map[string]any{"artifact": a.ID, "media_type": a.MediaType, "size": a.Size}))
		parts = append(parts, fmt.Sprintf("[%s artifact %s: %s, %d bytes%s]", kind, a.ID, a.MediaType, a.Size, label))
		return nil
	}
	for _, b := range blocks {
		var err error
		switch b := b.(type) {
		case *mcp.TextContent:
			parts = append(parts, h.gov.scrub(b.Text))
		case *mcp.ImageContent:
			err = keep("image", b.Data, b.MIMEType, "")
		case *mcp.AudioContent:
			err = keep("audio", b.Data, b.MIMEType, "")
		case *mcp.EmbeddedResource:
			rc := b.Resource
			if rc == nil {
				return "", nil, fmt.Errorf("embedded resource without contents")
			}
			label := ", " + quoteURI(rc.URI)
			if rc.Blob != nil {
				err = keep("resource", rc.Blob, rc.MIMEType, label)
			} else {
				mt := rc.MIMEType
				if mt == "" {
					mt = "text/plain"
				}
				err = keep("resource", []byte(h.gov.scrub(rc.Text)), mt, label)
			}
		case *mcp.ResourceLink:
			parts = append(parts, h.gov.scrub(fmt.Sprintf("[resource link %s%s]", quoteURI(b.URI), nameSuffix(b.Name))))
		default:
			return "", nil, fmt.Errorf("unsupported content type %T", b)
		}
		if err != nil {
			return "", nil, err
		}
	}
	return strings.Join(parts, "\n"), artifacts, nil
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
