// Package policy decides, before anything is sent to a server, whether a
// tool call, a resource read or a prompt get runs, needs a person's
// approval first, or is refused; and it
// computes the action digest an approval is bound to and the summary the
// person reads. It compiles the policy: section of a
// [github.com/airlockhq/airlock/config.Config] and is
// imported by the root package, which runs it in the call pipeline. It
// reads no state and starts nothing: a [Policy] is immutable and safe for
// concurrent use.
//
// # Effects
//
// Every MCP tool has an effect: [Read], [Write] or [External]. A tool is
// External unless policy.tools classifies it (by server id and the
// server's own tool name, exactly), and only policy.tools can mark it
// idempotent. A server's annotations (readOnlyHint, destructiveHint, …) are
// never an input to the effect or the verdict: a server cannot vouch for
// its own tools. [Summary] shows them to a person, marked as hints.
//
// A resource read and a prompt get are Read and idempotent: policy.tools
// classifies tools only.
//
// # Rules
//
// A rule matches a call when its server glob matches the server id and its
// tool glob matches the tool's local name (fs__write_file) or the server's
// own name for it (write_file). In these globs * stands for any run of
// characters and every other character for itself; matching is
// case-sensitive. A rule that leaves server or tool out has "*" there.
//
// A rule names at most one of a tool, a resource and a prompt, and matches
// requests of that kind only ([Request.Kind]): a rule with a resource glob
// matches resource reads whose URI it matches (* is any run of characters
// but /, ** any run, "*" alone every URI; see
// [github.com/airlockhq/airlock/config.MatchResource]); a rule with a prompt
// glob matches prompt gets whose local or remote prompt name it matches,
// as a tool glob does; a rule with a tool glob, tool calls. A rule that
// names only a server ({server: fs, decision: deny}) matches every tool
// call, resource read and prompt get of the servers it names; its
// argument constraints, if any, check tool calls only.
//
// Of the matching rules, the most specific wins. Specificity compares the
// tool, resource or prompt glob first (* for a rule that names only a
// server) and the server glob second; for each, a name without *
// beats any glob with *, and otherwise more literal (non-*) characters
// win. So {tool: fs__write_file} beats {tool: write_file} (both exact, more
// literals), which beats {tool: "write_*"}, which beats {server: fs} (whose
// tool is *); and a rule about delete_* on every server beats a rule about
// everything on fs. Rules that are equally specific all apply and the
// strictest result wins (deny over ask over allow).
//
// A winning rule's argument constraints (args) are checked before its
// decision applies: if one fails, the rule denies, and the reason names the
// constraint. When no rule matches, a read tool is allowed and a write or
// external tool asks; a resource read and a prompt get are allowed.
//
// # Argument constraints
//
// A constraint names a JSON Pointer (RFC 6901) into the arguments. The
// value there must be a string, or an array whose elements are all strings
// (each is checked); a value that is missing, null or of another type
// fails, because a constraint that cannot be evaluated denies. Each of the
// constraint's checks must pass: enum (the value is one of the listed
// strings, exactly), pattern (an RE2 expression the whole value must
// match; it is anchored for you) and the path checks.
//
// Path checks are lexical: they look at the text of the path, never at a
// file system. The value is cleaned with [path.Clean] first, so "./a",
// "a//b", "a/./b", "a/" and "x/../a" are matched as "a", "a/b", "a/b", "a"
// and "a", and "a/../../etc" as "../etc". Then:
//
//   - deny globs are matched ignoring letter case and Unicode normalisation
//     (both sides in NFC, lower case), because a case-insensitive file
//     system opens .ENV for .env; a path that matches one fails;
//   - a path with a backslash is also checked against the deny globs with
//     its backslashes read as slashes (a Windows server would), and never
//     matches an allow glob;
//   - when there are allow globs, the path must match one, case-sensitively
//     (so SRC/x does not match src/**: a miss can only deny). A path that
//     still starts with .. after cleaning, or starts with ~ or a drive
//     letter (which servers may expand), matches no allow glob. An
//     absolute path matches only allow globs that start with /, and a
//     relative path only those that do not: ** alone never admits /etc.
//
// Globs use ** to cross directories (src/** matches src itself and
// everything below it; **/.env matches .env at any depth), * within one
// name, and also ?, [classes] and {alternatives}
// (github.com/bmatcuk/doublestar). A NUL character fails every path check.
//
// Because the checks are lexical, a symbolic link is not followed: if
// src/link points outside, src/link/x still matches src/**. The server
// must confine itself too (the bundled workspace server opens every path
// through an [os.Root]); policy is the first line, not the only one.
//
// # Cedar
//
// A Cedar file (policy.cedar, evaluated with github.com/cedar-policy/cedar-go)
// sees each call as:
//
//   - principal User::"USER", a member of Tenant::"TENANT";
//   - action Action::"LOCAL_TOOL_NAME", a member of Action::"read",
//     Action::"write" or Action::"external" by its effect;
//   - resource Server::"SERVER_ID";
//   - for a resource read, action Action::"resources/read" and for a prompt
//     get Action::"prompts/get", both members of Action::"read"; the
//     resource is the Server as for a tool call;
//   - context: the arguments as a record; for a resource read {uri: URI},
//     for a prompt get {prompt: LOCAL_PROMPT_NAME, arguments: {…}}.
//     Strings, booleans, arrays (as sets) and objects (as records) map
//     directly; null values are left out; whole numbers that fit 64 bits
//     are Longs; other numbers with at most four decimal places are
//     Decimals; any other number is a String of its exact text.
//
// A forbid that applies denies. Cedar skips a policy whose evaluation
// fails (a missing attribute, a type mismatch); here a forbid that fails
// denies, so that the shape of the arguments cannot get a call past it. A
// permit that applies is an opinion of allow; a permit that fails does
// nothing. Rules and Cedar combine deny-overrides: the final verdict is the
// strictest of the opinions given (the rules' when one matched, Cedar's
// when one of its policies applied), and the effect's default only when
// neither gave one. So a Cedar permit never lifts a rule's ask or deny: it
// can only allow a call that no rule speaks about, which is what someone
// who writes policies in Cedar instead of rules needs.
//
// # Approvals
//
// An approval is bound to the [Digest] of the call: the tool's local and
// remote names, the server, the tool's description and input schema in the
// snapshot the call resolved against, the canonical JSON of the arguments
// (internal/canonical) and the working directory. Other arguments, or the same
// arguments after the server changed the tool's description or schema,
// give another digest, so they need another approval.
package policy
