package fedmeshctl

import (
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"
)

// TestColumnsAsTabwriter: a table written at once is laid out as text/tabwriter lays out kubectl's (padding 3,
// the last column unpadded), wide characters and empty cells included.
func TestColumnsAsTabwriter(t *testing.T) {
	for _, rows := range [][][]string{
		{{"NAME", "READY", "AGE"}, {"web-1", "1/1", "3m"}, {"a-much-longer-name", "0/1", ""}},
		{{"CLUSTER", "NAME"}, {"mémber", "pod/ünïcode"}, {"m", ""}},
		{{"", "", ""}, {"x", "", "z"}},
		{{"ONE"}},
	} {
		var want strings.Builder
		tw := tabwriter.NewWriter(&want, 0, 8, 3, ' ', 0)
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		if err := tw.Flush(); err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		c := NewColumns(&got)
		c.Fit(rows...)
		for _, r := range rows {
			if err := c.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if got.String() != want.String() {
			t.Errorf("rows %q:\ngot\n%q\nwant\n%q", rows, got.String(), want.String())
		}
	}
}

// TestColumnsGrow: a row written later lines up with the earlier ones, and a wider cell widens its column from
// then on.
func TestColumnsGrow(t *testing.T) {
	var out strings.Builder
	c := NewColumns(&out)
	for _, r := range [][]string{{"CLUSTER", "NAME", "STATUS"}, {"member1", "web-1", "Running"}, {"member2", "a-longer-name", "Pending"}, {"m3", "x", "Running"}} {
		if err := c.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	want := "CLUSTER   NAME   STATUS\n" +
		"member1   web-1   Running\n" +
		"member2   a-longer-name   Pending\n" +
		"m3        x               Running\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
