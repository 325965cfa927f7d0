// Package reconcileutil holds what every reconciler does the same way and
// nothing about BIND: status patches guarded by the object's UID
// (PatchStatus, ReplaceStatus) and conditions, server-side apply with the
// operator's field manager, finalizers, event handlers that settle or
// throttle a burst of events, the re-check of stored objects against the
// current admission rules (Rechecks, with the
// bind_operator_invalid_objects gauge and the Invalid report), and the
// manager's cache and client options with the resync defaults. It imports
// no other package of controllers/.
package reconcileutil
