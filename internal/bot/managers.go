package bot

// DefaultGitOpsManagers are the field managers of the GitOps controllers
// whose forward apply reverts live changes: Flux's controllers and Argo CD's.
var DefaultGitOpsManagers = []string{
	"kustomize-controller",
	"helm-controller",
	"argocd-controller",
	"argocd-application-controller",
}
