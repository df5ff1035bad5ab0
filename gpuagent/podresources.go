package gpuagent

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// PodRef names the Kubernetes container that holds a device.
type PodRef struct {
	Namespace, Pod, Container string
}

// podResourcesTimeout bounds one List call: the kubelet answers locally in
// milliseconds; a hung kubelet must not stall a collection.
const podResourcesTimeout = 5 * time.Second

// PodResources lists device assignments from the kubelet pod-resources API,
// as dcgm-exporter does. It is safe for use by one goroutine at a time.
type PodResources struct {
	socket string
	conn   *grpc.ClientConn
	client podresourcesapi.PodResourcesListerClient
}

// NewPodResources returns a client for socket. It does not connect: a missing
// socket (no Kubernetes on this node) makes DeviceMap return an empty map.
func NewPodResources(socket string) *PodResources {
	return &PodResources{socket: socket}
}

// DeviceMap returns device ID → pod for every device of an NVIDIA resource
// (nvidia.com/gpu, nvidia.com/mig-*). Device IDs are GPU or MIG UUIDs.
func (p *PodResources) DeviceMap(ctx context.Context) (map[string]PodRef, error) {
	if p == nil || p.socket == "" {
		return nil, nil
	}
	if _, err := os.Stat(p.socket); err != nil {
		return nil, nil
	}
	if p.client == nil {
		conn, err := grpc.NewClient("unix://"+p.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, fmt.Errorf("dial pod-resources %s: %w", p.socket, err)
		}
		p.conn = conn
		p.client = podresourcesapi.NewPodResourcesListerClient(conn)
	}
	ctx, cancel := context.WithTimeout(ctx, podResourcesTimeout)
	defer cancel()
	resp, err := p.client.List(ctx, &podresourcesapi.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("list pod resources: %w", err)
	}
	out := map[string]PodRef{}
	for _, pod := range resp.GetPodResources() {
		for _, c := range pod.GetContainers() {
			for _, d := range c.GetDevices() {
				if !strings.HasPrefix(d.GetResourceName(), "nvidia.com/") {
					continue
				}
				for _, id := range d.GetDeviceIds() {
					out[id] = PodRef{Namespace: pod.GetNamespace(), Pod: pod.GetName(), Container: c.GetName()}
				}
			}
		}
	}
	return out, nil
}

// Close releases the connection.
func (p *PodResources) Close() error {
	if p == nil || p.conn == nil {
		return nil
	}
	return p.conn.Close()
}
