package acceptance

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
)

func TestConditionMessageFitsTheAPI(t *testing.T) {
	v := Verdict[*version]{Reason: "Invalid", Err: errors.New("bad"), Message: strings.Repeat("é", maxMessage)}
	msg := v.Condition().Message
	if len(msg) > maxMessage || !utf8.ValidString(msg) || !strings.HasSuffix(msg, " ...") {
		t.Fatalf("message of %d bytes (valid UTF-8: %v), ending %q", len(msg), utf8.ValidString(msg), msg[len(msg)-8:])
	}
}

// TestConditionIsEachKindsAccepted: the condition a verdict sets is the one each kind's API names Accepted.
func TestConditionIsEachKindsAccepted(t *testing.T) {
	for _, want := range []string{configv1alpha1.CustomizationConditionAccepted, configv1alpha1.WebhookConfigurationConditionAccepted} {
		if got := (&Verdict[*version]{}).Condition().Type; got != want {
			t.Errorf("condition %q, want %q", got, want)
		}
	}
}
