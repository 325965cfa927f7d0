package certs

// The self-managed mode needs, and only needs: the one Secret in the
// operator's namespace (create cannot be limited by name, so the grant is
// namespaced instead), and read/update of the two webhook configurations by
// name. list and watch are limited by name too, because Manager watches with
// a metadata.name field selector. The names are the ones config/default
// produces; kustomize's namePrefix does not rewrite resourceNames.

// +kubebuilder:rbac:groups="",namespace=bind-operator-system,resources=secrets,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,resourceNames=bind-operator-mutating-webhook-configuration,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,resourceNames=bind-operator-validating-webhook-configuration,verbs=get;list;watch;update
