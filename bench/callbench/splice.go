package main

import (
	"fmt"
	"strings"
)

// ownCommand is what the header of a report says once sections of it
// were measured on their own (-update).
const ownCommand = "A section that names a command of its own was measured on its own, by that command; the others, by the one above."

// splice returns the report old with the sections of report (a report of
// some sections only) in place of old's sections of the same names, and
// those old lacks at its end. The rest of old stays as it is; each section
// spliced in says which command measured it, and when.
func splice(old, report string) string {
	head, sections := splitReport(old)
	_, fresh := splitReport(report)
	note := fmt.Sprintf("Measured on its own by `%s` on %s.\n\n", commandLine(), machine())
	for _, f := range fresh {
		heading, body, _ := strings.Cut(f, "\n")
		f = heading + "\n\n" + note + strings.TrimPrefix(body, "\n")
		i := len(sections)
		for j, s := range sections {
			if sectionName(s) == sectionName(f) {
				i = j
				break
			}
		}
		if i == len(sections) {
			if i > 0 && !strings.HasSuffix(sections[i-1], "\n\n") {
				sections[i-1] += "\n"
			}
			sections = append(sections, f)
			continue
		}
		sections[i] = f
	}
	if !strings.Contains(head, ownCommand) {
		// After the paragraph that says what produced the report.
		at := len(head)
		if i := strings.Index(head, "Produced by "); i >= 0 {
			if j := strings.Index(head[i:], "\n\n"); j >= 0 {
				at = i + j + 2
			}
		}
		head = head[:at] + ownCommand + "\n\n" + head[at:]
	}
	return head + strings.Join(sections, "")
}

// splitReport splits a report into what comes before its first section,
// and its sections: each a line that begins with "## ", and what follows
// it up to the next.
func splitReport(r string) (head string, sections []string) {
	starts := []int{}
	for i := 0; i < len(r); {
		if strings.HasPrefix(r[i:], "## ") {
			starts = append(starts, i)
		}
		j := strings.IndexByte(r[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
	}
	if len(starts) == 0 {
		return r, nil
	}
	head = r[:starts[0]]
	for k, s := range starts {
		end := len(r)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		sections = append(sections, r[s:end])
	}
	return head, sections
}

// sectionName is a section's heading up to the first colon or
// parenthesis: what stays the same when the numbers in it change.
func sectionName(section string) string {
	heading, _, _ := strings.Cut(section, "\n")
	if i := strings.IndexAny(heading, ":("); i >= 0 {
		heading = heading[:i]
	}
	return strings.TrimSpace(heading)
}
