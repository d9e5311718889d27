package observe

import (
	"testing"
	"time"
)

// The forgeries of finding 1: a review posted by someone who can reach the
// webhook's port, each turning bob's denied drift into alice's change.

// stsAt is a watched StatefulSet as the watch sees it at resourceVersion rv.
func stsAt(name, uid, rv string, replicas int64) map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": name, "namespace": "redis", "uid": uid, "resourceVersion": rv},
		"spec":     map[string]any{"replicas": replicas},
	}
}

const (
	replicasUID = "bc236f21-e28a-4aef-9a03-80ab2d13616e"
	masterUID   = "5d0c2a77-1f0e-4f7e-9d1a-2b6f0a9c1e11"
)

// withStatus is obj with a status the API server set (a status update).
func withStatus(obj map[string]any, ready int64) map[string]any {
	obj["status"] = map[string]any{"readyReplicas": ready}
	return obj
}

// reviewBy is scale.json (3 -> 4 reviewed at 204) as user, reviewed at
// oldRV, for the object uid.
func reviewBy(t *testing.T, user, reviewUID, oldRV, uid string) AdmissionRecord {
	t.Helper()
	r := record(t, "scale")
	r.User, r.Groups, r.ReviewUID, r.OldResourceVersion, r.UID = user, []string{"sre"}, reviewUID, oldRV, uid
	if user == "bob" {
		r.Groups = nil
	}
	return r
}

func replicasChange(l *AdmissionLog) Change {
	key := ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"}
	o := redisObservation(Field{Path: "spec.replicas", Live: int64(4)})
	o.ObservedAt = t0.Add(time.Hour)
	return AttributeAll(o, nil, l.RecordsOf(key)).Change
}

func TestAdmissionForgeriesNeverConfirmed(t *testing.T) {
	cases := []struct {
		why string
		run func(t *testing.T, l *AdmissionLog)
		// actor is who the field must be attributed to: bob's real write,
		// or nobody.
		actor string
	}{
		{why: "a stale claim (the value already live, reviewed at the version the watch saw) is not confirmed by a status update",
			actor: "bob", run: func(t *testing.T, l *AdmissionLog) {
				watchSees(l, nil, stsAt("redis-replicas", replicasUID, "204", 3))
				l.Add(reviewBy(t, "bob", "bob-1", "204", replicasUID))
				watchSees(l, stsAt("redis-replicas", replicasUID, "204", 3), stsAt("redis-replicas", replicasUID, "205", 4))
				l.Add(reviewBy(t, "alice", "forged-stale", "205", replicasUID))
				watchSees(l, stsAt("redis-replicas", replicasUID, "205", 4), withStatus(stsAt("redis-replicas", replicasUID, "206", 4), 4))
			}},
		{why: "a review naming redis-replicas with redis-master's uid is not confirmed by redis-master's write",
			actor: "bob", run: func(t *testing.T, l *AdmissionLog) {
				watchSees(l, nil, stsAt("redis-replicas", replicasUID, "204", 3))
				watchSees(l, nil, stsAt("redis-master", masterUID, "190", 3))
				l.Add(reviewBy(t, "bob", "bob-1", "204", replicasUID))
				watchSees(l, stsAt("redis-replicas", replicasUID, "204", 3), stsAt("redis-replicas", replicasUID, "205", 4))
				l.Add(reviewBy(t, "alice", "forged-uid", "190", masterUID))
				watchSees(l, stsAt("redis-master", masterUID, "190", 3), stsAt("redis-master", masterUID, "206", 4))
			}},
		{why: "a review claiming resourceVersion 0 is not confirmed by the watch's first list after a restart",
			run: func(t *testing.T, l *AdmissionLog) {
				l.Add(reviewBy(t, "alice", "forged-zero", "0", replicasUID))
				watchSees(l, nil, stsAt("redis-replicas", replicasUID, "205", 4))
			}},
	}
	for _, c := range cases {
		l := &AdmissionLog{Now: (&testClock{t: t0}).now}
		c.run(t, l)
		ch := replicasChange(l)
		if ch.Actor != c.actor {
			t.Errorf("%s: attributed to %q at %s (%s), want %q", c.why, ch.Actor, ch.Attribution, ch.Evidence, c.actor)
		}
	}
}

// watchSees is the watch delivering obj (after old, nil for a list).
func watchSees(l *AdmissionLog, old, obj map[string]any) int {
	return l.Confirm("prod-us-east-1", old, obj)
}
