"""The node labels that carry topology on a real cluster (GPU feature discovery and
the well-known zone/rack labels), and the extended resource the device plugin
counts GPUs by.  Kept apart from the node importer so the renderer can name them
without importing YAML."""

GPU_PRODUCT = "nvidia.com/gpu.product"
GPU_COUNT = "nvidia.com/gpu.count"
GPU_MEMORY = "nvidia.com/gpu.memory"
GPU_CLIQUE = "nvidia.com/gpu.clique"
ZONE_LABEL = "topology.kubernetes.io/zone"
RACK_LABEL = "topology.kubernetes.io/rack"
# The device plugin's extended resource: a node's GPU capacity, a container's GPU request.
GPU_RESOURCE = "nvidia.com/gpu"
