// Package telemetry sends the audit trail to OpenTelemetry as log records,
// when the standard OpenTelemetry environment asks for an exporter.
//
// FromEnv reads the OTEL_* variables (see FromEnv) and returns nil when
// nothing is to be exported; the nil *Exporter is valid and costs nothing,
// so a host can write
//
//	tel, err := telemetry.FromEnv(ctx, &telemetry.Options{Logger: log})
//	…
//	audit = tel.Audit(audit)
//	defer tel.Shutdown(shutdownCtx)
//
// Each appended store.Event becomes one log record whose event name and
// body are the event's name, with the audit fields as attributes. Records
// are batched and sent in the background; the audit trail never waits for
// the collector, and a collector that is down or slow never fails an
// Append. Events are expected to be redacted before they are appended: this
// package sends what it is given.
//
// The host imports telemetry.
package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	"golang.org/x/time/rate"

	"github.com/airlockhq/airlock/store"
)

// scope is the instrumentation scope of every record: the module that
// writes the audit trail.
const scope = "github.com/airlockhq/airlock"

// errorInterval is how often an export failure is logged at most: a
// collector that is down fails every batch, and one line a minute says so.
const errorInterval = time.Minute

// Options configures an Exporter. The zero value works.
type Options struct {
	// Logger receives export failures, at most one line a minute (with the
	// number of failures not logged since the previous line). Failures
	// carry the collector's response text, so the logger should redact like
	// the host's does. Nil discards them.
	Logger *slog.Logger
}

// An Exporter sends audit events to an OpenTelemetry collector. It is safe
// for concurrent use. The nil *Exporter exports nothing: Audit returns the
// trail unchanged and Shutdown does nothing.
type Exporter struct {
	provider *sdklog.LoggerProvider
	logger   otellog.Logger
}

// newExporter sends through exp, which it owns from now on, as res.
func newExporter(exp sdklog.Exporter, res *resource.Resource, o *Options) *Exporter {
	// The batch processor would hand export errors to OpenTelemetry's
	// process-wide error handler, which prints to stderr; the reporter logs
	// them here instead and keeps stderr for the host.
	rep := newReporter(o, "the audit trail")
	provider := sdklog.NewLoggerProvider(sdklog.WithResource(res),
		sdklog.WithProcessor(sdklog.NewBatchProcessor(reportingExporter{Exporter: exp, rep: rep})))
	return &Exporter{provider: provider, logger: provider.Logger(scope)}
}

// Audit returns a trail that appends to next and then sends the events to
// OpenTelemetry. Events reads next. On a nil Exporter, Audit returns next.
func (e *Exporter) Audit(next store.Audit) store.Audit {
	if e == nil {
		return next
	}
	return &audit{next: next, e: e}
}

// Shutdown sends what is still queued and stops the exporter; it returns
// when done or when ctx ends, whichever is first. Events appended after
// Shutdown still reach the trail but are not sent. A nil Exporter returns
// nil at once.
func (e *Exporter) Shutdown(ctx context.Context) error {
	if e == nil {
		return nil
	}
	if err := e.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("stop the OpenTelemetry exporter: %w", err)
	}
	return nil
}

// emit queues ev; it never blocks on the network, and drops the record if
// the queue is full.
func (e *Exporter) emit(ctx context.Context, ev store.Event) {
	rec := record(ev, time.Now())
	e.logger.Emit(ctx, rec)
}

// audit is the trail that Audit returns.
type audit struct {
	next store.Audit
	e    *Exporter
}

var _ store.Audit = (*audit)(nil)

// Append appends to next, then sends each event. A zero time is set here
// so that the trail and the record agree (to the microsecond, which SQL
// timestamps keep). The events are sent even if next fails, since an
// off-host copy matters most when the local trail cannot be written, but
// not those that are malformed, which every trail refuses.
func (a *audit) Append(ctx context.Context, events ...store.Event) error {
	now := time.Now().Truncate(time.Microsecond)
	stamped := make([]store.Event, len(events))
	for i, ev := range events {
		if ev.Time.IsZero() {
			ev.Time = now
		}
		stamped[i] = ev
	}
	err := a.next.Append(ctx, stamped...)
	for _, ev := range stamped {
		if ev.Check() == nil {
			a.e.emit(ctx, ev)
		}
	}
	return err
}

// Unwrap returns next: where a writer that writes a batch again after
// a failure sends it, so that each event is sent once however often the
// trail is tried.
func (a *audit) Unwrap() store.Audit { return a.next }

// Events returns next's events.
func (a *audit) Events(ctx context.Context, since time.Time, limit int) ([]store.Event, error) {
	return a.next.Events(ctx, since, limit)
}

// Tail returns next's newest events.
func (a *audit) Tail(ctx context.Context, since time.Time, after int64, limit int) (store.EventPage, error) {
	return a.next.Tail(ctx, since, after, limit)
}

// Verify verifies next's chain.
func (a *audit) Verify(ctx context.Context) (store.ChainReport, error) {
	return a.next.Verify(ctx)
}

// reportingExporter logs the errors of exp's exports through rep and
// returns none, so that nothing reaches OpenTelemetry's global handler.
type reportingExporter struct {
	sdklog.Exporter
	rep *reporter
}

var _ sdklog.Exporter = reportingExporter{}

func (r reportingExporter) Export(ctx context.Context, records []sdklog.Record) error {
	if err := r.Exporter.Export(ctx, records); err != nil {
		r.rep.report(err, len(records))
	}
	return nil
}

// reporter logs export failures, rate-limited.
type reporter struct {
	log        *slog.Logger
	what       string // what is exported, for the log line
	limit      rate.Sometimes
	suppressed atomic.Int64 // failures not logged since the last line
}

// newReporter reports the failures to send what to o.Logger.
func newReporter(o *Options, what string) *reporter {
	log := slog.New(slog.DiscardHandler)
	if o != nil && o.Logger != nil {
		log = o.Logger
	}
	return &reporter{log: log, what: what, limit: rate.Sometimes{First: 1, Interval: errorInterval}}
}

func (r *reporter) report(err error, records int) {
	logged := false
	r.limit.Do(func() {
		logged = true
		r.log.Warn("cannot send "+r.what+" to OpenTelemetry",
			"error", err, "records", records, "failures_not_logged", r.suppressed.Swap(0))
	})
	if !logged {
		r.suppressed.Add(1)
	}
}
