package cel

import "testing"

func TestSmoke(t *testing.T) { _ = k8sClient }
