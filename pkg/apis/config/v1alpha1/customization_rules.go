package v1alpha1

// CustomizationRules are the Lua scripts for one kind. Each script is a whole Lua chunk that defines the named
// function; the federation calls it with plain Lua tables built from the objects.
// +kubebuilder:validation:XValidation:rule="has(self.retention) || has(self.replicaResource) || has(self.replicaRevision) || has(self.statusReflection) || has(self.statusAggregation) || has(self.healthInterpretation) || has(self.dependencyInterpretation) || has(self.componentResource)",message="customizations must define at least one rule"
type CustomizationRules struct {
	// Retention keeps fields that member-cluster controllers own (an HPA's replicas, a workflow controller's
	// spec.suspend) so that the federation and the member do not overwrite each other forever.
	// +optional
	Retention *LocalValueRetention `json:"retention,omitempty"`

	// ReplicaResource finds the replica count and per-replica requirements, for dividing replicas among clusters.
	// Overrides the built-in rules for the kind.
	// +optional
	ReplicaResource *ReplicaResourceRequirement `json:"replicaResource,omitempty"`

	// ReplicaRevision sets the replica count a cluster was given.
	// +optional
	ReplicaRevision *ReplicaRevision `json:"replicaRevision,omitempty"`

	// StatusReflection picks the part of a member's object that is reported back as its status.
	// +optional
	StatusReflection *StatusReflection `json:"statusReflection,omitempty"`

	// StatusAggregation combines the members' statuses into the template's status.
	// +optional
	StatusAggregation *StatusAggregation `json:"statusAggregation,omitempty"`

	// HealthInterpretation judges whether a member's object is healthy.
	// +optional
	HealthInterpretation *HealthInterpretation `json:"healthInterpretation,omitempty"`

	// DependencyInterpretation lists the objects the template depends on, for propagateDeps.
	// +optional
	DependencyInterpretation *DependencyInterpretation `json:"dependencyInterpretation,omitempty"`

	// ComponentResource lists the components of a workload made of several pod sets (e.g. a job with a leader and
	// workers), each with its replicas and requirements.
	// +optional
	ComponentResource *ComponentResourceRequirement `json:"componentResource,omitempty"`
}

// LocalValueRetention holds the Retain script:
// Retain(desiredObj, observedObj) returns desiredObj after copying into it what the member cluster owns from
// observedObj, the object as it is in the member cluster.
// +kubebuilder:validation:XValidation:rule="self.luaScript.contains('Retain')",message="retention.luaScript must define function Retain"
type LocalValueRetention struct {
	// LuaScript defines function Retain(desiredObj, observedObj).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	// +required
	LuaScript string `json:"luaScript"`
}

// ReplicaResourceRequirement holds the GetReplicas script:
// GetReplicas(desiredObj) returns the replica count and a table shaped like a binding's replicaRequirements
// (nodeClaim, resourceRequest, namespace, priorityClassName).
// +kubebuilder:validation:XValidation:rule="self.luaScript.contains('GetReplicas')",message="replicaResource.luaScript must define function GetReplicas"
type ReplicaResourceRequirement struct {
	// LuaScript defines function GetReplicas(desiredObj).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	// +required
	LuaScript string `json:"luaScript"`
}

// ReplicaRevision holds the ReviseReplica script:
// ReviseReplica(desiredObj, desiredReplica) returns desiredObj with its replica count set to desiredReplica.
// +kubebuilder:validation:XValidation:rule="self.luaScript.contains('ReviseReplica')",message="replicaRevision.luaScript must define function ReviseReplica"
type ReplicaRevision struct {
	// LuaScript defines function ReviseReplica(desiredObj, desiredReplica).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	// +required
	LuaScript string `json:"luaScript"`
}

// StatusReflection holds the ReflectStatus script:
// ReflectStatus(observedObj) returns the status to record for the member's object (all or part of its status).
// +kubebuilder:validation:XValidation:rule="self.luaScript.contains('ReflectStatus')",message="statusReflection.luaScript must define function ReflectStatus"
type StatusReflection struct {
	// LuaScript defines function ReflectStatus(observedObj).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	// +required
	LuaScript string `json:"luaScript"`
}

// StatusAggregation holds the AggregateStatus script:
// AggregateStatus(desiredObj, statusItems) returns desiredObj with its status combined from statusItems, the
// per-cluster items of the binding's aggregatedStatus; statusItems is nil while no member has reported, as in
// Karmada.
// +kubebuilder:validation:XValidation:rule="self.luaScript.contains('AggregateStatus')",message="statusAggregation.luaScript must define function AggregateStatus"
type StatusAggregation struct {
	// LuaScript defines function AggregateStatus(desiredObj, statusItems).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	// +required
	LuaScript string `json:"luaScript"`
}

// HealthInterpretation holds the InterpretHealth script:
// InterpretHealth(observedObj) returns true when the member's object is healthy.
// +kubebuilder:validation:XValidation:rule="self.luaScript.contains('InterpretHealth')",message="healthInterpretation.luaScript must define function InterpretHealth"
type HealthInterpretation struct {
	// LuaScript defines function InterpretHealth(observedObj).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	// +required
	LuaScript string `json:"luaScript"`
}

// DependencyInterpretation holds the GetDependencies script:
// GetDependencies(desiredObj) returns a list of references (apiVersion, kind, namespace, name or labelSelector).
// +kubebuilder:validation:XValidation:rule="self.luaScript.contains('GetDependencies')",message="dependencyInterpretation.luaScript must define function GetDependencies"
type DependencyInterpretation struct {
	// LuaScript defines function GetDependencies(desiredObj).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	// +required
	LuaScript string `json:"luaScript"`
}

// ComponentResourceRequirement holds the GetComponents script:
// GetComponents(desiredObj) returns a list of components, each with a name, replicas and replicaRequirements.
// +kubebuilder:validation:XValidation:rule="self.luaScript.contains('GetComponents')",message="componentResource.luaScript must define function GetComponents"
type ComponentResourceRequirement struct {
	// LuaScript defines function GetComponents(desiredObj).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	// +required
	LuaScript string `json:"luaScript"`
}
