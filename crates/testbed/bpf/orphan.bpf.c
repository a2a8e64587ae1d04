// daqnet testbed: an XDP program that passes every frame. Attached to the wire ends of a
// parallel leaf-spine's links, it makes the kernel copy each frame Open vSwitch sends into a
// fresh buffer (an AF_PACKET frame lacks XDP's headroom), which no longer belongs to the
// sending socket: the link's queue then holds frames the switch has let go of, as a switch's
// port buffer does, instead of frames charged to the one packet socket through which
// ovs-vswitchd sends to every port (212,992 bytes, shared by all ports, read-only in a
// network namespace). Without it a send beyond that socket buffer fails and Open vSwitch drops
// the frame without counting it.
struct xdp_md;

__attribute__((section("xdp"), used)) int pass(struct xdp_md *ctx)
{
	return 2; /* XDP_PASS */
}

char _license[] __attribute__((section("license"), used)) = "GPL";
