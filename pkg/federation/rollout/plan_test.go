package rollout

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestBudget(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int) *intstr.IntOrString { v := intstr.FromInt32(int32(n)); return &v }
	for _, tc := range []struct {
		name                     string
		unavailable, surge       *intstr.IntOrString
		total                    int32
		wantUnavailable, wantSur int32
		wantErr                  bool
	}{
		{name: "defaults: 25% each, surge up, unavailability down", total: 10, wantUnavailable: 2, wantSur: 3},
		{name: "absolute values are the whole federation's", unavailable: num(1), surge: num(0), total: 12, wantUnavailable: 1},
		{name: "both zero: one may be unavailable", unavailable: pct("10%"), surge: num(0), total: 5, wantUnavailable: 1},
		{name: "percentages of all replicas", unavailable: pct("50%"), surge: pct("10%"), total: 9, wantUnavailable: 4, wantSur: 1},
		{name: "a bad percentage", unavailable: pct("lots"), total: 4, wantErr: true},
		{name: "negative", unavailable: num(-1), surge: num(1), total: 4, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, s, err := Budget(tc.unavailable, tc.surge, tc.total)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && (u != tc.wantUnavailable || s != tc.wantSur) {
				t.Errorf("got unavailable %d surge %d, want %d %d", u, s, tc.wantUnavailable, tc.wantSur)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	m := func(name string, replicas int32, p Phase) Member {
		return Member{Name: name, Replicas: replicas, Phase: p}
	}
	for _, tc := range []struct {
		name               string
		unavailable, surge int32
		members            []Member
		want               map[string]Grant
	}{
		{
			name: "nothing to roll", unavailable: 1, surge: 1,
			members: []Member{m("a", 3, Idle), m("b", 3, Idle)},
			want:    map[string]Grant{},
		},
		{
			name: "one pod at a time: one cluster rolls, the others wait in name order", unavailable: 1,
			members: []Member{m("c", 2, Waiting), m("a", 2, Waiting), m("b", 2, Waiting)},
			want:    map[string]Grant{"a": {MaxUnavailable: 1}, "b": {Hold: true}, "c": {Hold: true}},
		},
		{
			name: "a cluster rolling keeps its turn; a done one frees a turn for the next", unavailable: 1,
			members: []Member{m("a", 2, Idle), m("b", 2, Rolling), m("c", 2, Waiting)},
			want:    map[string]Grant{"b": {MaxUnavailable: 1}, "c": {Hold: true}},
		},
		{
			name: "surge first, then unavailability, the rest by replicas", unavailable: 3, surge: 1,
			members: []Member{m("a", 6, Waiting), m("b", 2, Waiting)},
			// One each first: a the surge pod, b an unavailable one; the 2 unavailable left by replicas 6:2 are
			// 1.5 and 0.5, and the tied remainder goes to the heavier a.
			want: map[string]Grant{"a": {MaxSurge: 1, MaxUnavailable: 2}, "b": {MaxUnavailable: 1}},
		},
		{
			name: "more budget than clusters: all roll at once, sums kept", unavailable: 4, surge: 4,
			members: []Member{m("a", 8, Waiting), m("b", 8, Waiting)},
			want:    map[string]Grant{"a": {MaxSurge: 2, MaxUnavailable: 2}, "b": {MaxSurge: 2, MaxUnavailable: 2}},
		},
		{
			name: "the budget shrank below the clusters rolling: each still moves", unavailable: 1,
			members: []Member{m("a", 2, Rolling), m("b", 2, Rolling), m("c", 2, Waiting)},
			want:    map[string]Grant{"a": {MaxUnavailable: 1}, "b": {MaxUnavailable: 1}, "c": {Hold: true}},
		},
		{
			name: "a waiting cluster that cannot start takes no turn from one that can", unavailable: 1,
			members: []Member{{Name: "a", Replicas: 2, Phase: Waiting, Stuck: true}, m("b", 2, Waiting)},
			want:    map[string]Grant{"a": {Hold: true}, "b": {MaxUnavailable: 1}},
		},
		{
			name: "a cluster rolling keeps what it was granted: nothing left, the next waits", unavailable: 4,
			members: []Member{{Name: "a", Replicas: 10, Phase: Rolling, Granted: Grant{MaxUnavailable: 4}}, m("b", 10, Waiting)},
			want:    map[string]Grant{"a": {MaxUnavailable: 4}, "b": {Hold: true}},
		},
		{
			name: "what the rolling do not hold goes to the next, a pod first, and the rest by replicas", unavailable: 4,
			members: []Member{{Name: "a", Replicas: 10, Phase: Rolling, Granted: Grant{MaxUnavailable: 2}}, m("b", 10, Waiting)},
			// b takes 1 of the 2 left; the last one, 0.5 and 0.5 by replicas, goes to a by name.
			want: map[string]Grant{"a": {MaxUnavailable: 3}, "b": {MaxUnavailable: 1}},
		},
		{
			name: "the budget shrank below what the rolling hold: they share it anew and no one starts", unavailable: 2,
			members: []Member{{Name: "a", Replicas: 4, Phase: Rolling, Granted: Grant{MaxUnavailable: 4}}, m("b", 4, Waiting)},
			want:    map[string]Grant{"a": {MaxUnavailable: 2}, "b": {Hold: true}},
		},
		{
			name: "clusters with no replicas share equally", unavailable: 0, surge: 2,
			members: []Member{m("a", 0, Waiting), m("b", 0, Waiting), m("c", 0, Waiting)},
			want:    map[string]Grant{"a": {MaxSurge: 1}, "b": {MaxSurge: 1}, "c": {Hold: true}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Plan(tc.unavailable, tc.surge, tc.members)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			var u, s int32
			for _, g := range got {
				if !g.Hold && g.MaxUnavailable+g.MaxSurge < 1 {
					t.Errorf("a cluster rolls with no budget: %+v", got)
				}
				u, s = u+g.MaxUnavailable, s+g.MaxSurge
			}
			rolling := 0
			for _, mb := range tc.members {
				if mb.Phase == Rolling {
					rolling++
				}
			}
			if int64(rolling) <= int64(tc.unavailable)+int64(tc.surge) && (u > tc.unavailable || s > tc.surge) {
				t.Errorf("grants spend %d unavailable and %d surge, over the budget %d %d", u, s, tc.unavailable, tc.surge)
			}
		})
	}
}
