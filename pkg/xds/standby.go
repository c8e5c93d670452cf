package xds

import (
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrorDomain and ReasonNotLeader name a standby manager's refusal in its ErrorInfo detail: the client tells it
// from other failures by them, never by the message, which is for people.
const (
	ErrorDomain     = "xds.fedmesh.io"
	ReasonNotLeader = "NOT_LEADER"
)

// NotLeader is the error a manager replica that is not the leader ends a stream with: Unavailable, message for the
// logs, and an ErrorInfo of ReasonNotLeader. A client hearing it tries again soon (about a second) instead of
// backing off while that can save its ownership (Client.Run): only the leader serves, and one is due as soon as the
// election settles.
func NotLeader(message string) error {
	st, err := status.New(codes.Unavailable, message).WithDetails(&errdetails.ErrorInfo{Reason: ReasonNotLeader, Domain: ErrorDomain})
	if err != nil { // only if the detail cannot be marshalled
		return status.Error(codes.Unavailable, message)
	}
	return st.Err()
}

// IsNotLeader reports whether err is a refusal made by NotLeader, as received over gRPC or wrapped.
func IsNotLeader(err error) bool {
	var se interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &se) || se.GRPCStatus().Code() != codes.Unavailable {
		return false
	}
	for _, d := range se.GRPCStatus().Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == ReasonNotLeader && info.GetDomain() == ErrorDomain {
			return true
		}
	}
	return false
}
