// Package agent is Airlock's agent loop: it connects a model, through its
// provider's official SDK (OpenAI-compatible Chat Completions or
// Anthropic Messages), to a Host's governed catalog.
//
// One model step is one frozen snapshot (Host.BeginTurn); every tool call
// the model asks for goes through Host.Call, the same pipeline as any
// other caller's: strict decoding, policy and approval before anything is
// sent, schema checks, the journal. The provider's tool-call id is never
// the MCP request id. Parallel calls of one step run concurrently up to a
// bound, and their results go back in the order the model gave them.
//
// A run is durable: before any call of a step is sent, the run's
// checkpoint (messages, pending calls; never a key) is saved in the
// store (store.Runs), and each result as it comes. A run resumed after a
// crash asks the journal what became of each call that may have been
// sent: a completed call is given its recorded result, an unknown one is
// given to the model as unknown, and nothing is sent twice.
package agent
