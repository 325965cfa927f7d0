package v1alpha1

// ExtraOption is one statement BindCluster spec.extraOptions may hold:
// why it is safe to hand to whoever may create a BindCluster, and an
// example that BIND 9.18's named-checkconf accepts inside the options block
// (webhooks TestAllowedExtraOptionsPassNamedCheckconf checks every example).
// It is not an API type.
// +kubebuilder:object:generate=false
type ExtraOption struct {
	Why     string
	Example string
}

// Why-classes of the allowlist: every entry is one of these.
const (
	whyMemory    = "a resource bound: it caps memory, clients or work named spends, and names no file, address, port or key"
	whyCacheTTL  = "a cache lifetime knob: it changes how long answers are kept, never what is answered or to whom"
	whyResponse  = "shapes what is in a response (size, sections, cookies), never who may ask or where named listens"
	whyTransfer  = "a zone-transfer timing or volume knob; who may transfer stays the operator's (TSIG keys)"
	whyRefresh   = "bounds the SOA refresh/retry timers a secondary uses; no peer, address or key"
	whyResolver  = "a resolver behaviour knob (timeouts, depth, minimisation); no forwarders, addresses or trust anchors"
	whyCheck     = "a zone-content check that makes named stricter or more lenient about zone data, nothing else"
	whyIdentity  = "what named tells CHAOS-class queries about itself; setting it can only hide information"
	whyTCP       = "a TCP connection timer or queue length; named keeps listening where the operator says"
	whyRateLimit = "response rate limiting: it reduces what named sends, per client netblock"
)

// AllowedExtraOptions is the allowlist of statements spec.extraOptions may
// hold, by statement name. Anything else is refused at admission. By
// design it never admits a statement that names a file or directory
// (dnstap-output, *-file, key-directory), a listener address or port
// (listen-on, *-source), the control or statistics channels, keys or key
// exchange (key, tkey-*, trust anchors), access control (allow-update,
// allow-transfer, allow-notify, allow-query: the operator renders access
// from spec fields and TSIG keys), dnstap, plugins, or anything a spec field
// already renders (notify-rate, forwarders, recursion...).
//
// The webhook also runs named-checkconf on the candidate config, so the
// arguments of an allowed statement are BIND's own grammar.
var AllowedExtraOptions = map[string]ExtraOption{
	// Resource bounds.
	"max-cache-size":        {whyMemory, `max-cache-size 256m;`},
	"recursive-clients":     {whyMemory, `recursive-clients 2000;`},
	"tcp-clients":           {whyMemory, `tcp-clients 200;`},
	"clients-per-query":     {whyMemory, `clients-per-query 20;`},
	"max-clients-per-query": {whyMemory, `max-clients-per-query 200;`},
	"fetches-per-zone":      {whyMemory, `fetches-per-zone 200;`},
	"fetches-per-server":    {whyMemory, `fetches-per-server 400;`},
	"max-journal-size":      {whyMemory, `max-journal-size 64m;`},
	"max-records":           {whyMemory, `max-records 100000;`},
	"max-ixfr-ratio":        {whyMemory, `max-ixfr-ratio 50%;`},

	// Cache lifetimes.
	"max-cache-ttl":       {whyCacheTTL, `max-cache-ttl 86400;`},
	"max-ncache-ttl":      {whyCacheTTL, `max-ncache-ttl 3600;`},
	"min-cache-ttl":       {whyCacheTTL, `min-cache-ttl 30;`},
	"min-ncache-ttl":      {whyCacheTTL, `min-ncache-ttl 30;`},
	"max-stale-ttl":       {whyCacheTTL, `max-stale-ttl 3600;`},
	"stale-answer-enable": {whyCacheTTL, `stale-answer-enable yes;`},
	"stale-answer-ttl":    {whyCacheTTL, `stale-answer-ttl 30;`},
	"stale-cache-enable":  {whyCacheTTL, `stale-cache-enable yes;`},
	"stale-refresh-time":  {whyCacheTTL, `stale-refresh-time 30;`},
	"lame-ttl":            {whyCacheTTL, `lame-ttl 600;`},
	"servfail-ttl":        {whyCacheTTL, `servfail-ttl 1;`},
	"prefetch":            {whyCacheTTL, `prefetch 2 9;`},

	// Response shape.
	"minimal-responses":     {whyResponse, `minimal-responses yes;`},
	"minimal-any":           {whyResponse, `minimal-any yes;`},
	"edns-udp-size":         {whyResponse, `edns-udp-size 1232;`},
	"max-udp-size":          {whyResponse, `max-udp-size 1232;`},
	"nocookie-udp-size":     {whyResponse, `nocookie-udp-size 4096;`},
	"answer-cookie":         {whyResponse, `answer-cookie yes;`},
	"send-cookie":           {whyResponse, `send-cookie yes;`},
	"require-server-cookie": {whyResponse, `require-server-cookie no;`},
	"message-compression":   {whyResponse, `message-compression yes;`},
	"auth-nxdomain":         {whyResponse, `auth-nxdomain no;`},
	"empty-zones-enable":    {whyResponse, `empty-zones-enable yes;`},
	"synth-from-dnssec":     {whyResponse, `synth-from-dnssec yes;`},
	"rate-limit":            {whyRateLimit, `rate-limit { responses-per-second 10; window 5; };`},

	// Zone transfers.
	"max-transfer-time-in":  {whyTransfer, `max-transfer-time-in 60;`},
	"max-transfer-idle-in":  {whyTransfer, `max-transfer-idle-in 60;`},
	"max-transfer-time-out": {whyTransfer, `max-transfer-time-out 60;`},
	"max-transfer-idle-out": {whyTransfer, `max-transfer-idle-out 60;`},
	"transfers-in":          {whyTransfer, `transfers-in 20;`},
	"transfers-out":         {whyTransfer, `transfers-out 20;`},
	"transfers-per-ns":      {whyTransfer, `transfers-per-ns 4;`},
	"transfer-format":       {whyTransfer, `transfer-format many-answers;`},
	"provide-ixfr":          {whyTransfer, `provide-ixfr yes;`},
	"request-ixfr":          {whyTransfer, `request-ixfr yes;`},
	"ixfr-from-differences": {whyTransfer, `ixfr-from-differences yes;`},

	// SOA timers of secondaries.
	"max-refresh-time": {whyRefresh, `max-refresh-time 86400;`},
	"min-refresh-time": {whyRefresh, `min-refresh-time 300;`},
	"max-retry-time":   {whyRefresh, `max-retry-time 3600;`},
	"min-retry-time":   {whyRefresh, `min-retry-time 60;`},

	// Resolver behaviour.
	"resolver-query-timeout": {whyResolver, `resolver-query-timeout 10000;`},
	"max-recursion-depth":    {whyResolver, `max-recursion-depth 7;`},
	"max-recursion-queries":  {whyResolver, `max-recursion-queries 100;`},
	"qname-minimization":     {whyResolver, `qname-minimization relaxed;`},

	// Zone-content checks.
	"check-names":          {whyCheck, `check-names primary warn;`},
	"check-dup-records":    {whyCheck, `check-dup-records warn;`},
	"check-mx":             {whyCheck, `check-mx warn;`},
	"check-mx-cname":       {whyCheck, `check-mx-cname warn;`},
	"check-srv-cname":      {whyCheck, `check-srv-cname warn;`},
	"check-integrity":      {whyCheck, `check-integrity yes;`},
	"check-wildcard":       {whyCheck, `check-wildcard yes;`},
	"check-sibling":        {whyCheck, `check-sibling yes;`},
	"check-spf":            {whyCheck, `check-spf warn;`},
	"zone-statistics":      {whyCheck, `zone-statistics terse;`},
	"serial-update-method": {whyCheck, `serial-update-method increment;`},

	// Identity.
	"version":   {whyIdentity, `version none;`},
	"hostname":  {whyIdentity, `hostname none;`},
	"server-id": {whyIdentity, `server-id none;`},

	// TCP timers.
	"tcp-listen-queue":       {whyTCP, `tcp-listen-queue 10;`},
	"tcp-initial-timeout":    {whyTCP, `tcp-initial-timeout 300;`},
	"tcp-idle-timeout":       {whyTCP, `tcp-idle-timeout 300;`},
	"tcp-keepalive-timeout":  {whyTCP, `tcp-keepalive-timeout 300;`},
	"tcp-advertised-timeout": {whyTCP, `tcp-advertised-timeout 300;`},
}
