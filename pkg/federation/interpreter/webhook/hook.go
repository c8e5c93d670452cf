package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/uuid"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

// DefaultTimeout bounds a call of a webhook without timeoutSeconds.
const DefaultTimeout = 10 * time.Second

// maxResponseBytes bounds a webhook's answer.
const maxResponseBytes = 16 << 20

// hook is one webhook, ready to call.
type hook struct {
	config, name string
	rules        []configv1alpha1.RuleWithOperations
	url          string
	client       *http.Client
	timeout      time.Duration
	// spec is the webhook as configured, to tell what a new set changed (Changed).
	spec *configv1alpha1.ResourceInterpreterWebhook
}

// newHook checks w's client configuration and context versions and builds its HTTPS client.
func newHook(config string, w *configv1alpha1.ResourceInterpreterWebhook) (*hook, error) {
	if !slices.Contains(w.InterpreterContextVersions, ContextVersion) {
		return nil, fmt.Errorf("webhook %q accepts ResourceInterpreterContext versions %v, but fedmesh speaks only %s",
			w.Name, w.InterpreterContextVersions, ContextVersion)
	}
	target, err := endpoint(w)
	if err != nil {
		return nil, fmt.Errorf("webhook %q: %w", w.Name, err)
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(w.ClientConfig.CABundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(w.ClientConfig.CABundle) {
			return nil, fmt.Errorf("webhook %q: clientConfig.caBundle holds no PEM certificate", w.Name)
		}
		tlsConfig.RootCAs = pool
	}
	timeout := DefaultTimeout
	if w.TimeoutSeconds != nil && *w.TimeoutSeconds > 0 {
		timeout = time.Duration(*w.TimeoutSeconds) * time.Second
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	return &hook{
		config: config, name: w.Name, rules: w.Rules, url: target, timeout: timeout,
		client: &http.Client{Transport: transport}, spec: w.DeepCopy(),
	}, nil
}

// endpoint is the HTTPS URL of w: its url, or its service's DNS name in the cluster.
func endpoint(w *configv1alpha1.ResourceInterpreterWebhook) (string, error) {
	cc := w.ClientConfig
	switch {
	case cc.URL != nil && cc.Service != nil:
		return "", errors.New("clientConfig sets both url and service")
	case cc.URL != nil:
		u, err := url.Parse(*cc.URL)
		if err != nil {
			return "", fmt.Errorf("clientConfig.url: %w", err)
		}
		if u.Scheme != "https" || u.Host == "" {
			return "", fmt.Errorf("clientConfig.url %q: want an https URL with a host", *cc.URL)
		}
		return u.String(), nil
	case cc.Service != nil:
		port := int32(443)
		if cc.Service.Port != nil {
			port = *cc.Service.Port
		}
		path := ""
		if cc.Service.Path != nil {
			path = *cc.Service.Path
		}
		return fmt.Sprintf("https://%s.%s.svc:%d%s", cc.Service.Name, cc.Service.Namespace, port, path), nil
	default:
		return "", errors.New("clientConfig sets neither url nor service")
	}
}

// key orders hooks: the first matching one in key order answers.
func (h *hook) key() string { return h.config + "/" + h.name }

func (h *hook) String() string { return fmt.Sprintf("webhook %q of %q", h.name, h.config) }

// call sends op on obj, with what fill adds to the request, and returns the successful response.
func (h *hook) call(ctx context.Context, op interpreter.Operation, obj *unstructured.Unstructured, fill func(*ResourceInterpreterRequest)) (*ResourceInterpreterResponse, error) {
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	gvk := obj.GroupVersionKind()
	req := &ResourceInterpreterRequest{
		UID:  uuid.NewUUID(),
		Kind: metav1GVK(gvk.Group, gvk.Version, gvk.Kind),
		Name: obj.GetName(), Namespace: obj.GetNamespace(),
		Operation: op,
	}
	req.Object.Raw = raw
	if fill != nil {
		fill(req)
	}
	body, err := json.Marshal(&ResourceInterpreterContext{TypeMeta: contextTypeMeta(), Request: req})
	if err != nil {
		return nil, err
	}

	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h, err)
	}
	httpReq.Header.Set("Content-Type", "application/json")
	httpReq.Header.Set("Accept", "application/json")
	httpResp, err := h.client.Do(httpReq)
	if err != nil {
		return nil, fmt.Errorf("%s: %s %s: %w", h, op, obj.GetName(), err)
	}
	defer httpResp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(httpResp.Body, maxResponseBytes))
	if err != nil {
		return nil, fmt.Errorf("%s: reading the answer: %w", h, err)
	}
	if httpResp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s answered HTTP %d: %s", h, op, httpResp.StatusCode, bytes.TrimSpace(data[:min(len(data), 512)]))
	}
	var answer ResourceInterpreterContext
	if err := json.Unmarshal(data, &answer); err != nil {
		return nil, fmt.Errorf("%s: the answer is not a ResourceInterpreterContext: %w", h, err)
	}
	if err := checkAnswerType(answer.TypeMeta); err != nil {
		return nil, fmt.Errorf("%s: %w", h, err)
	}
	resp := answer.Response
	switch {
	case resp == nil:
		return nil, fmt.Errorf("%s: the answer has no response", h)
	case !resp.Successful:
		// Before the UID: a webhook refusing a request it could not decode does not know its UID.
		return nil, fmt.Errorf("%s: %s failed: %s", h, op, refusal(resp.Status))
	case resp.UID != req.UID:
		// No UIDs in the message: each call's is new, and a message that changes at every call is a new Event and
		// status write at every retry.
		return nil, fmt.Errorf("%s: %s: the answer is for another request (its UID is not the request's)", h, op)
	}
	return resp, nil
}

// refusal is why a webhook says it failed.
func refusal(s *RequestStatus) string {
	switch {
	case s == nil || (s.Message == "" && s.Code == 0):
		return "no reason given"
	case s.Message == "":
		return fmt.Sprintf("code %d, no reason given", s.Code)
	case s.Code == 0:
		return s.Message
	default:
		return fmt.Sprintf("%s (code %d)", s.Message, s.Code)
	}
}
