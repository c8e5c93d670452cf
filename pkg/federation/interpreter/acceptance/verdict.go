package acceptance

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionAccepted is the type of the condition a verdict sets: configv1alpha1's CustomizationConditionAccepted
// and WebhookConfigurationConditionAccepted, which are the same.
const ConditionAccepted = "Accepted"

// Version is the pointer to an accepted version an object's status keeps (*configv1alpha1.AcceptedVersion,
// *configv1alpha1.AcceptedWebhooks); DeepCopy of nil is nil.
type Version[P any] interface {
	DeepCopy() P
}

// Verdict is what a layer decided about one object: whether its current version is accepted, which generation
// serves, and which version to keep as its last accepted one. It is what the object's status says.
type Verdict[P Version[P]] struct {
	// Name of the object.
	Name string
	// Generation of its current version.
	Generation int64
	// Reason is the Accepted condition's reason.
	Reason string
	// Err says why the current version is refused; nil when accepted.
	Err error
	// Message is the Accepted condition's message: what serves, or Err and what serves instead, if anything.
	Message string
	// ServedGeneration is the generation that serves; zero when none does.
	ServedGeneration int64
	// LastAccepted is the version to keep: the current one when it is accepted, else the one the status has.
	LastAccepted P
}

// Accepted reports whether the current version serves.
func (v *Verdict[P]) Accepted() bool { return v.Err == nil }

// maxMessage is the longest condition message the API server takes.
const maxMessage = 32768

// Condition is the Accepted condition that says v.
func (v *Verdict[P]) Condition() metav1.Condition {
	status := metav1.ConditionTrue
	if !v.Accepted() {
		status = metav1.ConditionFalse
	}
	msg := v.Message
	if len(msg) > maxMessage {
		// Many long errors at once: a status the API server refuses would say nothing at all.
		msg = strings.ToValidUTF8(msg[:maxMessage-len(" ...")], "") + " ..."
	}
	return metav1.Condition{Type: ConditionAccepted, Status: status, ObservedGeneration: v.Generation, Reason: v.Reason,
		Message: msg}
}
