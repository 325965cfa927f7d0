#!/usr/bin/env bash
# Copies into the Helm chart (charts/bind-operator) what it shares with the
# kustomize install, so each has one source:
#
#   config/crd/bases/*.yaml        -> crds/              (controller-gen)
#   config/rbac/role.yaml          -> files/role.yaml    (controller-gen)
#   config/webhook/manifests.yaml  -> files/webhooks.yaml (controller-gen)
#   config/monitoring/dashboard.json -> files/dashboard.json
#   config/monitoring/prometheusrule.yaml -> files/prometheusrule.yaml
#   LICENSE                        -> LICENSE
#
# The templates read files/ with .Files.Get and fromYaml; Helm installs
# crds/ as they are. `make manifests` runs this after controller-gen, and
# `make verify-generated` fails when the copies differ from what is
# committed; test/chart proves the chart renders the objects of the release
# install files.
#
# usage: hack/sync-chart.sh
set -euo pipefail
cd "$(dirname "$0")/.."

chart=charts/bind-operator
mkdir -p "$chart/crds" "$chart/files"

# A CRD removed from config/crd/bases goes from the chart too.
rm -f "$chart"/crds/*.yaml
cp config/crd/bases/*.yaml "$chart/crds/"
cp config/rbac/role.yaml "$chart/files/role.yaml"
cp config/webhook/manifests.yaml "$chart/files/webhooks.yaml"
cp config/monitoring/dashboard.json "$chart/files/dashboard.json"
cp config/monitoring/prometheusrule.yaml "$chart/files/prometheusrule.yaml"
cp LICENSE "$chart/LICENSE"
