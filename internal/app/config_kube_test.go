package app

import (
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/botconfig"
	"github.com/backflow-dev/backflow/internal/observe/source"
)

func TestParseConfigKube(t *testing.T) {
	kube := minimalConfig + "observations:\n  prod-us-east-1:\n    - kube:\n        kubeconfig: kube/config\n        context: prod\n        objects: [\"apps/v1|StatefulSet|redis|redis-*\"]\n        resync: 1m\n        transitionWindow: 90s\n"
	cases := []struct{ why, yaml, want string }{
		{why: "a cluster watched directly, attributed from an audit log", yaml: kube + "audit:\n  logFiles: [audit.log]\n"},
		{why: "in-cluster config is a boolean", yaml: minimalConfig + "observations:\n  c1:\n    - kube:\n        inCluster: yes-please\n        objects: [x]\n", want: "line 8: observations.c1[0].kube.inCluster: want true or false"},
		{why: "the objects to watch are required", yaml: minimalConfig + "observations:\n  c1:\n    - kube:\n        context: prod\n", want: "observations.c1[0].kube.objects: required"},
		{why: "a kube source has no trust ceiling: its attribution is computed, not claimed", yaml: kube + "      trust: audit-log\n", want: "kube excludes path, url and trust"},
		{why: "the audit webhook needs a credential", yaml: kube + "audit:\n  webhook:\n    maxBytes: 100\n", want: "audit.webhook: a bearer token"},
		{why: "a credential is named by a file or a variable, not both", yaml: kube + "audit:\n  webhook:\n    tokenFile: t\n    tokenEnv: T\n", want: "tokenFile and tokenEnv are exclusive"},
		{why: "a transition window is a duration", yaml: minimalConfig + "observations:\n  c1:\n    - kube:\n        objects: [x]\n        transitionWindow: -1s\n", want: "observations.c1[0].kube.transitionWindow: must be positive"},
		{why: "in-cluster and a kubeconfig are exclusive", yaml: minimalConfig + "observations:\n  c1:\n    - kube:\n        inCluster: true\n        context: prod\n        objects: [x]\n", want: "inCluster excludes kubeconfig and context"},
	}
	for _, tc := range cases {
		t.Run(tc.why, func(t *testing.T) {
			bc, err := botconfig.ParseConfig("backflow.yaml", []byte(tc.yaml))
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := Wire(bc)
			srcs := c.Sources()
			ks, ok := srcs[0].(*source.KubeSource)
			if len(srcs) != 1 || !ok {
				t.Fatalf("sources %#v", srcs)
			}
			if ks.Cluster != "prod-us-east-1" || ks.Config.Context != "prod" || ks.Resync.Minutes() != 1 || ks.Audit == nil || len(ks.GitOpsManagers) == 0 {
				t.Errorf("kube source %+v", ks)
			}
			if ks.Transitions == nil || ks.Transitions.Window.Seconds() != 90 {
				t.Errorf("why: the transition window is the config's; %+v", ks.Transitions)
			}
			if ks.Audit != c.AuditLog() {
				t.Error("the sources and the audit webhook must share one event store")
			}
		})
	}
}
