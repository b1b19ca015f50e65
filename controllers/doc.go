// Package controllers holds the EtcdCluster reconciler. A pass reads like its table of
// contents (Reconcile): ensure certificates and services, observe everything once, let the
// pure planner pick one step, execute it, and write status once if it changed.
package controllers
