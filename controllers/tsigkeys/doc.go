// Package tsigkeys owns the BindTSIGKey reconciler: it generates a key's
// material into a Secret once, keeps that Secret's template metadata in
// line, adopts an imported Secret without ever writing to it, and reports
// the key's Ready condition. The clusters read the material through
// package clusterpods (KeySecretUsable, TSIGDefaults); this package is
// the only writer of generated key Secrets.
package tsigkeys
