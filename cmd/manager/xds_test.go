package main

import (
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A replica refuses streams with Unavailable and the reason until it is elected, then hands them to the server.
func TestLeaderOnly(t *testing.T) {
	elected := make(chan struct{})
	intercept := leaderOnly(elected)
	served := 0
	handler := func(any, grpc.ServerStream) error { served++; return nil }

	err := intercept(nil, nil, &grpc.StreamServerInfo{}, handler)
	if st, _ := status.FromError(err); st.Code() != codes.Unavailable || st.Message() != notLeaderMessage || served != 0 {
		t.Fatalf("before the election: %v (served %d), want Unavailable %q", err, served, notLeaderMessage)
	}
	close(elected)
	if err := intercept(nil, nil, &grpc.StreamServerInfo{}, handler); err != nil || served != 1 {
		t.Fatalf("elected: %v (served %d), want the stream served", err, served)
	}
}
