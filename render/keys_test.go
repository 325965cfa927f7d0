package render

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
)

// TestKeyMaterialWithLineBreaks: an imported Secret made from a file
// (`kubectl create secret generic --from-file=secret=key.b64`) keeps the
// file's line breaks. Base64 ignores them, in Go and in BIND alike, so the
// material is good and named must get it as it is: escaped, as Go quotes a
// string, BIND reads "\n" as the letter n and refuses the key ("bad
// base64 encoding").
func TestKeyMaterialWithLineBreaks(t *testing.T) {
	bin := namedCheckconf(t)
	for name, material := range map[string]string{
		"trailing newline": secret32 + "\n",
		"CRLF":             secret32 + "\r\n",
		"wrapped":          secret64[:40] + "\n" + secret64[40:] + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			in := scenarioAuthoritative()
			k := in.Keys["partner"]
			k.Secret = material
			in.Keys["partner"] = k
			out, err := Render(in)
			if err != nil {
				t.Fatalf("Render refuses good material: %v", err)
			}
			if !strings.Contains(string(out.SecretData[FileKeys]), `secret "`+material+`";`) {
				t.Errorf("keys.conf does not carry the material as it is:\n%s", out.SecretData[FileKeys])
			}
			if err := Check(context.Background(), in, bin); err != nil {
				t.Errorf("named-checkconf refuses the keys: %v", err)
			}
		})
	}
}

// validBase64 reads material as base64.StdEncoding.DecodeString does,
// on its stack buffer and past it.
func TestValidBase64(t *testing.T) {
	long := base64.StdEncoding.EncodeToString(make([]byte, 300))
	for in, want := range map[string]bool{
		secret32:                     true,
		long:                         true,
		long[:40] + "\n" + long[40:]: true, // wrapped, as DecodeString reads it
		"":                           false,
		"not base64!":                false,
		long[:len(long)-1]:           false,
		"====":                       false,
	} {
		_, err := base64.StdEncoding.DecodeString(in)
		if got := validBase64(in); got != want || got != (err == nil && in != "") {
			t.Errorf("validBase64(%.20q…) = %v, want %v (DecodeString: %v)", in, got, want, err)
		}
	}
}

// Several BindTSIGKeys may define one BIND key with one material: keys.conf
// holds it once, between its neighbours by name. With a second material
// the render refuses, whichever pair is listed first.
func TestOneBINDKeyOfSeveralObjects(t *testing.T) {
	in := scenarioAuthoritative()
	k := in.Keys["partner"]
	for _, obj := range []string{"partner-2", "partner-3", "a-partner"} {
		in.Keys[obj] = k
	}
	out, err := Render(in)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	keys := string(out.SecretData[FileKeys])
	if n := strings.Count(keys, `key "`+k.Name+`"`); n != 1 {
		t.Errorf("keys.conf defines %q %d times, want once:\n%s", k.Name, n, keys)
	}
	base, err := Render(scenarioAuthoritative())
	if err != nil {
		t.Fatal(err)
	}
	if string(base.SecretData[FileKeys]) != keys {
		t.Errorf("keys.conf changed by objects that repeat a key:\n%s", keys)
	}
	other := k
	other.Secret = secret64
	in.Keys["partner-3"] = other
	for range 20 { // the map's order changes from one render to the next
		_, err := Render(in)
		want := `BindTSIGKeys partner-2 and partner-3 both define BIND key "` + k.Name + `" with different material`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Render = %v, want an error saying %q", err, want)
		}
	}
}
