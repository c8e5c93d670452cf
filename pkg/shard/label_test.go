package shard

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/sharding"
)

func TestBucketLabelValue(t *testing.T) {
	for i := range 500 {
		ns := fmt.Sprintf("team-%d", i)
		got := BucketLabelValue(ns)
		// The bucket is the first two hex digits of the hash the API server computes.
		if want := sharding.HashField(ns)[:2]; got != want {
			t.Fatalf("BucketLabelValue(%q) = %q, want %q", ns, got, want)
		}
		if !BucketRange(Bucket(NamespaceHash(ns))).Contains(NamespaceHash(ns)) {
			t.Fatalf("namespace %q is outside its bucket's range", ns)
		}
	}
}

func TestBucketRange(t *testing.T) {
	tests := []struct {
		b    uint8
		want Range
	}{
		{0, rg(0, 1<<56-1)},
		{1, rg(1<<56, 2<<56-1)},
		{0xff, rg(0xff<<56, top)},
	}
	for _, tt := range tests {
		if got := BucketRange(tt.b); got != tt.want {
			t.Errorf("BucketRange(%#x) = %v, want %v", tt.b, got, tt.want)
		}
	}
}

// bucketList is "in (from..to)" spelled out: the hex buckets from through to.
func bucketList(from, to int) string {
	var values []string
	for b := from; b <= to; b++ {
		values = append(values, fmt.Sprintf("%02x", b))
	}
	return BucketLabel + " in (" + strings.Join(values, ",") + ")"
}

func TestLabelRequirement(t *testing.T) {
	shop := NamespaceHash("shop")
	tests := []struct {
		name  string
		s     Set
		want  string
		exact bool
	}{
		{"full", Full(), bucketList(0, 255), true},
		{"low half", Split(2)[0], bucketList(0, 0x7f), true},
		{"one bucket", NewSet(BucketRange(0x3a)), bucketList(0x3a, 0x3a), true},
		{"first third ends inside bucket 55", Split(3)[0], bucketList(0, 0x55), false},
		{"carved namespace", Point(shop), bucketList(int(Bucket(shop)), int(Bucket(shop))), false},
		{"low half without a namespace", Split(2)[0].Difference(Point(0x10 << 56)), bucketList(0, 0x7f), false},
		{"two apart", NewSet(BucketRange(1), BucketRange(3)), BucketLabel + " in (01,03)", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, exact, err := LabelRequirement(tt.s)
			if err != nil {
				t.Fatal(err)
			}
			if req.String() != tt.want || exact != tt.exact {
				t.Errorf("LabelRequirement(%v) = %q, exact %v; want %q, exact %v", tt.s, req.String(), exact, tt.want, tt.exact)
			}
			// The requirement may select too much but never too little; exact ones select precisely.
			for i := range 2000 {
				ns := fmt.Sprintf("ns-%d", i)
				selected := req.Matches(labels.Set{BucketLabel: BucketLabelValue(ns)})
				if owned := tt.s.ContainsNamespace(ns); owned && !selected || exact && selected != owned {
					t.Fatalf("namespace %q: owned %v, selected %v", ns, owned, selected)
				}
			}
		})
	}
	if _, _, err := LabelRequirement(Set{}); !errors.Is(err, ErrEmptySet) {
		t.Errorf("LabelRequirement of the empty set: err = %v, want ErrEmptySet", err)
	}
}

func TestMergeLabelSelector(t *testing.T) {
	req, _, err := LabelRequirement(NewSet(BucketRange(0), BucketRange(1)))
	if err != nil {
		t.Fatal(err)
	}
	const ours = BucketLabel + " in (00,01)"
	tests := []struct {
		name, client, want string
		wantErr            bool
	}{
		{"no client selector", "", ours, false},
		{"equality", "app=web", "app=web," + ours, false},
		{"set-based and existence", "tier in (a,b),!legacy", "!legacy," + ours + ",tier in (a,b)", false},
		{"client also asks for a bucket", BucketLabel + "=01", BucketLabel + "=01," + ours, false},
		{"invalid", "app in (a", "", true},
		{"invalid value", "app=a b", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MergeLabelSelector(tt.client, req)
			if (err != nil) != tt.wantErr {
				t.Fatalf("MergeLabelSelector(%q) error = %v, want error %v", tt.client, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("MergeLabelSelector(%q) = %q, want %q", tt.client, got, tt.want)
			}
			if tt.wantErr {
				return
			}
			// The merged selector must still be one the API server accepts.
			if _, err := labels.Parse(got); err != nil {
				t.Errorf("merged selector %q does not parse: %v", got, err)
			}
		})
	}
}
