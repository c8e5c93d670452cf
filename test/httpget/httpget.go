// Package httpget reads what test processes serve over plain HTTP on loopback: metrics, profiles.
package httpget

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// Body is the body of url's answer to a GET, which must be 200 OK.
func Body(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}
