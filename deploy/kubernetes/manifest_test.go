// Package kubernetes holds the manifests that run an sdrnet sweep on a
// Kubernetes cluster; its test checks them against Kubernetes' own API
// types and against the sweep they run.
package kubernetes

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/sdrnet/sdrnet/scenarios"
	"github.com/sdrnet/sdrnet/sim/scenario"
	"github.com/sdrnet/sdrnet/sim/sweep"
)

// decode reads a file of YAML documents into Kubernetes' API types,
// strictly: a misspelt or misplaced field is an error, as the API
// server's strict field validation makes it.
func decode(t *testing.T, file string) (jobs []batchv1.Job, claims []corev1.PersistentVolumeClaim) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, doc := range bytes.Split(data, []byte("\n---\n")) {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s: document %d: %v", file, i, err)
		}
		switch meta.APIVersion + " " + meta.Kind {
		case "batch/v1 Job":
			var j batchv1.Job
			if err := yaml.UnmarshalStrict(doc, &j); err != nil {
				t.Fatalf("%s: document %d: %v", file, i, err)
			}
			jobs = append(jobs, j)
		case "v1 PersistentVolumeClaim":
			var c corev1.PersistentVolumeClaim
			if err := yaml.UnmarshalStrict(doc, &c); err != nil {
				t.Fatalf("%s: document %d: %v", file, i, err)
			}
			claims = append(claims, c)
		default:
			t.Fatalf("%s: document %d is a %s %s: this test knows Jobs and PersistentVolumeClaims", file, i, meta.APIVersion, meta.Kind)
		}
	}
	return jobs, claims
}

// TestManifests checks the Indexed Job and the merge Job against the API
// types and against the sweep they run: one completion per task of the
// plan, the task index from Kubernetes, the directory on a volume every
// pod shares.
func TestManifests(t *testing.T) {
	jobs, claims := decode(t, "sweep-job.yaml")
	merges, _ := decode(t, "merge-job.yaml")
	if len(jobs) != 1 || len(claims) != 1 || len(merges) != 1 {
		t.Fatalf("want a Job and a PersistentVolumeClaim, and a merge Job; got %d, %d, %d", len(jobs), len(claims), len(merges))
	}
	job, claim, merge := jobs[0], claims[0], merges[0]
	if job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Error("the sweep's Job is not Indexed: its pods would have no JOB_COMPLETION_INDEX")
	}
	if !slices.Contains(claim.Spec.AccessModes, corev1.ReadWriteMany) {
		t.Error("the sweep's volume is not ReadWriteMany: pods on other nodes could not write their cells")
	}

	script := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
	const dir = "/sweep/csaud"
	if !strings.Contains(script, "sdrnet sweep plan csaud --full --out "+dir) || !strings.Contains(script, "sdrnet sweep run "+dir) {
		t.Errorf("the pod's script %q does not plan csaud's full grid into %s and run its task there", script, dir)
	}
	if got := strings.Join(merge.Spec.Template.Spec.Containers[0].Args, " "); got != "sweep merge "+dir {
		t.Errorf("the merge Job runs %q, want sweep merge %s", got, dir)
	}

	// One completion per task of the plan the pods make.
	data, err := scenarios.FS.ReadFile("csaud.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Parse("csaud.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sweep.Plan(t.TempDir(), s, nil, true, 1)
	if err != nil {
		t.Fatal(err)
	}
	if job.Spec.Completions == nil || int(*job.Spec.Completions) != m.Tasks {
		t.Errorf("completions %v, but csaud's full grid plans %d tasks", job.Spec.Completions, m.Tasks)
	}

	for _, j := range []batchv1.Job{job, merge} {
		pod := j.Spec.Template.Spec
		if pod.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("%s: restartPolicy %q: a Job's pods restart Never (or OnFailure)", j.Name, pod.RestartPolicy)
		}
		for _, c := range pod.Containers {
			for _, vm := range c.VolumeMounts {
				i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == vm.Name })
				if i < 0 {
					t.Errorf("%s: mounts volume %q, which the pod does not have", j.Name, vm.Name)
					continue
				}
				if pvc := pod.Volumes[i].PersistentVolumeClaim; pvc == nil || pvc.ClaimName != claim.Name || vm.MountPath != "/sweep" {
					t.Errorf("%s: volume %q is not claim %s at /sweep", j.Name, vm.Name, claim.Name)
				}
			}
		}
	}
}
