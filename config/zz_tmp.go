package config

import "path"

func (s *Server) AllowsAllResources() bool {
	return len(s.AllowedResources) == 1 && s.AllowedResources[0] == "*"
}
func (s *Server) AllowsResource(uri string) bool {
	if s.AllowsAllResources() {
		return true
	}
	for _, g := range s.AllowedResources {
		if ok, _ := path.Match(g, uri); ok {
			return true
		}
	}
	return false
}
func (s *Server) AllowsAllPrompts() bool { return len(s.AllowedPrompts) == 1 && s.AllowedPrompts[0] == "*" }
func (s *Server) AllowsPrompt(name string) bool {
	if s.AllowsAllPrompts() {
		return true
	}
	for _, g := range s.AllowedPrompts {
		if g == name {
			return true
		}
	}
	return false
}
