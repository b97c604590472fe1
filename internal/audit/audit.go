// Package audit writes the audit trail. A Writer is the one way events
// reach a store.Audit, for the host and for the CLI alike: it stamps each
// event with its time, queues it, and writes the queue in the background,
// in batches, so that a call never waits on the disk for its audit trail
// (the journal, not the audit trail, is what guarantees that no write is
// lost).
//
// Before an event is written, the writer prepares it off the caller's
// path: fields that may carry a server's or a person's text are redacted,
// and arguments and results put in with Record become their shape and
// hash, and their redacted values where the configuration asks for them
// (audit.record_values).
//
// It imports store and internal/redact; the root package imports it, and
// wraps the store.Audit it writes to (for OpenTelemetry export).
package audit

import (
	"encoding/json"
	"slices"

	"github.com/airlockhq/airlock/internal/canonical"
	"github.com/airlockhq/airlock/internal/redact"
	"github.com/airlockhq/airlock/store"
)

// hostFields are audit fields the host makes itself, from ids, counts,
// policy text and values already redacted: they need no second pass.
// Everything else (errors, a hook's reason, notes) may carry a server's
// or a person's text and is redacted.
var hostFields = map[string]bool{
	"decision": true, "rule": true, "effect": true, "attempt": true, "intent": true, "approval": true, "call": true,
	"recovery": true, "generation": true, "tools": true, "task": true, "protocol_version": true,
	"artifact": true, "media_type": true, "size": true,
	"args": true, "args_shape": true, "args_hash": true, "result": true, "result_shape": true, "result_hash": true,
	"content": true, "content_shape": true, "content_hash": true,
}

// Record puts v, an argument list or a result of tool, into fields under
// key, as the audit trail keeps it: key_shape and key_hash, and key (the
// redacted values) where Options.RecordValues names tool. The work is done
// by the writer, off the caller's path: v must not change afterwards.
func Record(fields map[string]any, key, tool string, v any) {
	fields[key] = deferred{v: v, tool: tool}
}

// A deferred is a value put in with Record, which the writer turns into
// its record.
type deferred struct {
	v    any
	tool string
}

// preparer finishes events on the writer.
type preparer struct {
	redactor *redact.Redactor
	values   func(tool string) bool // record the values of this tool's arguments and results
}

func newPreparer(o *Options) preparer {
	record := o.RecordValues
	return preparer{redactor: o.Redactor, values: func(tool string) bool {
		return slices.Equal(record, []string{"*"}) || slices.Contains(record, tool)
	}}
}

// mayHoldText reports whether v, a field's value, may hold text to
// redact: not a number, a boolean or nil, which redact.Value would only
// turn into the same JSON.
func mayHoldText(v any) bool {
	switch v.(type) {
	case nil, bool, int, int32, int64, uint, uint32, uint64, float64:
		return false
	}
	return true
}

// prepare redacts the fields of e that are not hostFields and replaces the
// values put in with Record by their records. The loop may visit a field it
// added: redacting what is already redacted changes nothing.
func (p preparer) prepare(e *store.Event) {
	for k, f := range e.Fields {
		d, ok := f.(deferred)
		if !ok {
			if !hostFields[k] && mayHoldText(f) {
				e.Fields[k] = p.redactor.Value(f)
			}
			continue
		}
		v := d.v
		if raw, ok := v.(json.RawMessage); ok {
			// Decoded once for the shape, the hash and the values, not
			// once by each; what does not decode is left to each of them.
			if dv, err := canonical.Decode(raw); err == nil {
				v = dv
			}
		}
		shape, hash := recordKeys(k)
		delete(e.Fields, k)
		e.Fields[shape] = p.redactor.Shape(v)
		e.Fields[hash] = canonical.Hash(v)
		if p.values(d.tool) {
			e.Fields[k] = p.redactor.Value(v)
		}
	}
}

// recordKeys returns the keys of key's shape and hash: key_shape and
// key_hash, without building them for the keys the host records.
func recordKeys(key string) (shape, hash string) {
	switch key {
	case "args":
		return "args_shape", "args_hash"
	case "result":
		return "result_shape", "result_hash"
	case "content":
		return "content_shape", "content_hash"
	}
	return key + "_shape", key + "_hash"
}
