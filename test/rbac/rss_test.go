package rbac

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"git.unkin.net/unkin/bind-operator/controllers/clusters"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
	"git.unkin.net/unkin/bind-operator/controllers/tsigkeys"
	"git.unkin.net/unkin/bind-operator/internal/version"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// rssChildEnv makes the test binary a manager that reports its memory
// (runRSSChild) instead of running tests; its value is the cache mode.
const rssChildEnv = "BIND_OPERATOR_RSS_CHILD"

// unrelatedSecrets is how many Secrets nobody's BindCluster uses the
// benchmark puts in the cluster, each with 1 KiB of data.
const unrelatedSecrets = 1000

// BenchmarkManagerRSS reports the manager's resident memory once its cache
// has synced, with 1,000 unrelated 1 KiB Secrets in the cluster: the
// manager as it was (every Secret, ConfigMap, Service, ... cached) against
// the scoped cache (reconcileutil.CacheOptions). Each manager runs in its
// own process (this binary, re-executed), so neither sees the other's heap
// or the API server's client.
//
//	go test ./test/rbac -run '^$' -bench BenchmarkManagerRSS -benchtime 1x
func BenchmarkManagerRSS(b *testing.B) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "unrelated"}}
	// -count runs this again on the same API server: what exists stays.
	testkit.Must(b, ignoreExists(k8sClient.Create(ctx, ns)))
	data := bytes.Repeat([]byte("x"), 1024)
	for i := range unrelatedSecrets {
		testkit.Must(b, ignoreExists(k8sClient.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%04d", i), Namespace: ns.Name},
			Data:       map[string][]byte{"payload": data},
		})))
	}
	cfg, err := json.Marshal(childConfig{Host: adminConfig.Host, CA: adminConfig.CAData, Cert: adminConfig.CertData, Key: adminConfig.KeyData})
	testkit.Must(b, err)
	for _, mode := range []string{"unscoped", "scoped"} {
		b.Run("cache="+mode, func(b *testing.B) {
			var r rssReport
			for range b.N {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), rssChildEnv+"="+mode, "BIND_OPERATOR_RSS_CONFIG="+string(cfg))
				cmd.Stderr = os.Stderr
				out, err := cmd.Output()
				if err != nil {
					b.Fatalf("manager process: %v\n%s", err, out)
				}
				testkit.Must(b, json.Unmarshal(lastLine(out), &r))
			}
			b.ReportMetric(float64(r.RSSKiB)/1024, "RSS-MiB")
			b.ReportMetric(float64(r.HWMKiB)/1024, "peak-RSS-MiB")
			b.ReportMetric(float64(r.HeapKiB)/1024, "heap-MiB")
			b.ReportMetric(float64(r.CachedSecrets), "cached-Secrets")
		})
	}
}

type childConfig struct {
	Host          string
	CA, Cert, Key []byte
}

type rssReport struct {
	RSSKiB, HWMKiB, HeapKiB int64
	CachedSecrets           int
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func lastLine(out []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	return lines[len(lines)-1]
}

// runRSSChild runs a manager with the BindCluster and BindTSIGKey
// reconcilers (the ones that watch Secrets) until its cache has synced,
// and prints its memory as JSON on the last line of stdout.
func runRSSChild(mode string) error {
	ctrl.SetLogger(logr.Discard())
	var cc childConfig
	if err := json.Unmarshal([]byte(os.Getenv("BIND_OPERATOR_RSS_CONFIG")), &cc); err != nil {
		return err
	}
	cfg := &rest.Config{Host: cc.Host, TLSClientConfig: rest.TLSClientConfig{CAData: cc.CA, CertData: cc.Cert, KeyData: cc.Key}}
	opts := ctrl.Options{Scheme: testkit.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}}
	if mode == "scoped" {
		opts.Cache, opts.NewClient = reconcileutil.CacheOptions(cfg), reconcileutil.NewClient
	}
	var mgr ctrl.Manager
	stop, err := testkit.StartManager(ctx, cfg, opts, func(m ctrl.Manager) error {
		mgr = m
		if err := (&clusters.BindClusterReconciler{Client: m.GetClient(), Paths: render.DefaultPaths(),
			Options: clusters.ClusterOptions{BindImage: version.BindImage(), AgentImage: version.OperatorImage()}}).SetupWithManager(m); err != nil {
			return err
		}
		return (&tsigkeys.BindTSIGKeyReconciler{Client: m.GetClient()}).SetupWithManager(m)
	})
	if err != nil {
		return err
	}
	defer func() { _ = stop() }()
	var secrets corev1.SecretList
	if err := mgr.GetCache().List(ctx, &secrets); err != nil {
		return err
	}
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r := rssReport{HeapKiB: int64(ms.HeapInuse / 1024), CachedSecrets: len(secrets.Items)}
	if r.RSSKiB, r.HWMKiB, err = procStatus(); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// procStatus reads VmRSS and VmHWM (kB) from /proc/self/status.
func procStatus() (rss, hwm int64, err error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, err
		}
		if name == "VmRSS" {
			rss = n
		} else {
			hwm = n
		}
	}
	return rss, hwm, sc.Err()
}
