package serve

import "net/http"

func (s *Server) graphPage(w http.ResponseWriter, r *http.Request) {
	s.refuse(w, r, http.StatusNotFound, "not yet")
}
