package confighubtest

import (
	"errors"
	"net/http"
	"strings"
)

// Applied is the answer of ApplyHandler: the revision ConfigHub's worker
// applied and its data, for the caller to apply to its cluster.
type Applied struct {
	RevisionNum int64  `json:"RevisionNum"`
	Data        string `json:"Data"`
}

// ApplyHandler is the stand-in's own route for what ConfigHub's worker does,
// which is not part of ConfigHub's API: POST with the query parameters
// space and unit (slugs) runs Apply on that Unit and answers Applied as
// JSON. It takes the API's bearer tokens; errors are StandardErrorResponses
// (400 without space or unit, 401, 404 for no such Unit, 405 for another
// method). Serve it outside BasePath, so that no client of the API mistakes
// it for an operation.
func (s *Server) ApplyHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, "apply takes POST")
			return
		}
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if _, known := s.opts.Tokens[token]; !ok || !known {
			writeError(w, http.StatusUnauthorized, "Unauthorized access.")
			return
		}
		q := r.URL.Query()
		space, unit := q.Get("space"), q.Get("unit")
		if space == "" || unit == "" {
			writeError(w, http.StatusBadRequest, "apply needs the query parameters space and unit (slugs)")
			return
		}
		num, data, err := s.Apply(space, unit)
		if err != nil {
			writeError(w, http.StatusNotFound, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, Applied{RevisionNum: num, Data: string(data)})
	})
}

// CheckManifests reports whether data is what UploadUnitData accepts as a
// Kubernetes/YAML Unit's data, holding at least one resource: every
// document a mapping naming its apiVersion, kind and metadata.name, none
// repeated. AddUnit does not check (a test may want a Unit ConfigHub's
// clients cannot read); a caller seeding Units from files does.
func CheckManifests(data []byte) error {
	rs, err := readResources(data)
	if err != nil {
		return err
	}
	if len(rs) == 0 {
		return errors.New("no manifest: the data holds no document")
	}
	return nil
}
