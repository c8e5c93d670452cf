package main

import (
	"encoding/json"
	"fmt"
	"net/http"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/webhook"
)

// The kind this webhook interprets.
const (
	group   = "apps.example.io"
	version = "v1alpha1"
	kind    = "Workload"
)

// Handler answers ResourceInterpreterContexts about Workloads.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST a ResourceInterpreterContext", http.StatusMethodNotAllowed)
			return
		}
		var review webhook.ResourceInterpreterContext
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "the body is not a ResourceInterpreterContext with a request", http.StatusBadRequest)
			return
		}
		resp, err := interpret(review.Request)
		if err != nil {
			resp = &webhook.ResourceInterpreterResponse{Status: &webhook.RequestStatus{Message: err.Error(), Code: http.StatusBadRequest}}
		} else {
			resp.Successful = true
		}
		resp.UID = review.Request.UID
		review.Request, review.Response = nil, resp
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&review)
	})
}

// workload is the part of a Workload this webhook reads.
type workload struct {
	Spec struct {
		Replicas      *int32 `json:"replicas,omitempty"`
		Paused        *bool  `json:"paused,omitempty"`
		ConfigMapName string `json:"configMapName,omitempty"`
		Template      struct {
			Spec corev1.PodSpec `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
	Status workloadStatus `json:"status"`
}

type workloadStatus struct {
	Replicas      int32 `json:"replicas"`
	ReadyReplicas int32 `json:"readyReplicas"`
}

func interpret(req *webhook.ResourceInterpreterRequest) (*webhook.ResourceInterpreterResponse, error) {
	if req.Kind.Group != group || req.Kind.Version != version || req.Kind.Kind != kind {
		return nil, fmt.Errorf("this webhook interprets %s/%s %s, not %s", group, version, kind, req.Kind)
	}
	var obj workload
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return nil, fmt.Errorf("object: %w", err)
	}
	replicas := ptr.Deref(obj.Spec.Replicas, 1)
	resp := &webhook.ResourceInterpreterResponse{}
	switch req.Operation {
	case interpreter.InterpretReplica:
		resp.Replicas = &replicas
		resp.ReplicaRequirements = requirements(&obj.Spec.Template.Spec)
	case interpreter.ReviseReplica:
		if req.DesiredReplicas == nil {
			return nil, fmt.Errorf("ReviseReplica without replicas")
		}
		return patch(req.Object.Raw, func(o map[string]any) error {
			return unstructured.SetNestedField(o, int64(*req.DesiredReplicas), "spec", "replicas")
		})
	case interpreter.Retain:
		// A member's operator may pause its copy; that choice survives the federation's updates.
		if req.ObservedObject == nil {
			return nil, fmt.Errorf("Retain without the observed object")
		}
		var observed workload
		if err := json.Unmarshal(req.ObservedObject.Raw, &observed); err != nil {
			return nil, fmt.Errorf("observed object: %w", err)
		}
		return patch(req.Object.Raw, func(o map[string]any) error {
			if observed.Spec.Paused == nil {
				return nil
			}
			return unstructured.SetNestedField(o, *observed.Spec.Paused, "spec", "paused")
		})
	case interpreter.AggregateStatus:
		var sum workloadStatus
		for _, item := range req.AggregatedStatus {
			s, err := itemStatus(item)
			if err != nil {
				return nil, err
			}
			sum.Replicas += s.Replicas
			sum.ReadyReplicas += s.ReadyReplicas
		}
		return patch(req.Object.Raw, func(o map[string]any) error {
			return unstructured.SetNestedMap(o, map[string]any{
				"replicas": int64(sum.Replicas), "readyReplicas": int64(sum.ReadyReplicas)}, "status")
		})
	case interpreter.InterpretStatus:
		raw, err := json.Marshal(obj.Status)
		if err != nil {
			return nil, err
		}
		resp.RawStatus = &runtime.RawExtension{Raw: raw}
	case interpreter.InterpretHealth:
		resp.Healthy = ptr.To(obj.Status.ReadyReplicas >= replicas)
	case interpreter.InterpretDependency:
		resp.Dependencies = []interpreter.DependentObjectReference{}
		if obj.Spec.ConfigMapName != "" {
			resp.Dependencies = append(resp.Dependencies, interpreter.DependentObjectReference{
				APIVersion: "v1", Kind: "ConfigMap", Namespace: req.Namespace, Name: obj.Spec.ConfigMapName})
		}
	default:
		return nil, fmt.Errorf("operation %s is not implemented", req.Operation)
	}
	return resp, nil
}

// requirements is what one replica asks for: the sum of its containers' requests.
func requirements(pod *corev1.PodSpec) *workv1alpha1.ReplicaRequirements {
	sum := corev1.ResourceList{}
	for _, c := range pod.Containers {
		for name, q := range c.Resources.Requests {
			total := sum[name]
			total.Add(q)
			sum[name] = total
		}
	}
	if len(sum) == 0 {
		return nil
	}
	return &workv1alpha1.ReplicaRequirements{ResourceRequest: sum}
}

func itemStatus(item workv1alpha1.AggregatedStatusItem) (workloadStatus, error) {
	var s workloadStatus
	if item.Status == nil || len(item.Status.Raw) == 0 {
		return s, nil
	}
	if err := json.Unmarshal(item.Status.Raw, &s); err != nil {
		return s, fmt.Errorf("status of cluster %s: %w", item.ClusterName, err)
	}
	return s, nil
}

// patch answers with the JSON patch that change makes to the object raw.
func patch(raw []byte, change func(map[string]any) error) (*webhook.ResourceInterpreterResponse, error) {
	var o map[string]any
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, err
	}
	if err := change(o); err != nil {
		return nil, err
	}
	changed, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	ops, err := jsonpatch.CreatePatch(raw, changed)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	return &webhook.ResourceInterpreterResponse{Patch: data, PatchType: ptr.To(webhook.PatchTypeJSONPatch)}, nil
}
