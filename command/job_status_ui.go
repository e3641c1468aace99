package command

import (
	"strings"
	"unicode"

	"github.com/droverhq/drover/structs"
)

// formatJobUI renders a job's ui block (description and links) as a
// section of job status, or nothing when the job has none.
func formatJobUI(u *structs.JobUIConfig) []string {
	if u == nil || (u.Description == "" && len(u.Links) == 0) {
		return nil
	}
	var lines []string
	if u.Description != "" {
		lines = append(lines, printable(strings.TrimSpace(u.Description)))
	}
	if len(u.Links) > 0 {
		rows := make([][]string, 0, len(u.Links))
		for _, l := range u.Links {
			if l != nil {
				rows = append(rows, []string{printable(l.Label), printable(l.URL)})
			}
		}
		lines = append(lines, formatTable([]string{"Link", "URL"}, rows))
	}
	return []string{"Description\n" + strings.Join(lines, "\n")}
}

// printable drops control characters other than newlines and tabs, so
// a job's text cannot move the terminal's cursor or change its colours.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return -1
		}
		return r
	}, s)
}
