// SPDX-License-Identifier: BSD-3-Clause
// The packet source's classes as every generation has them (PktSrc.h,
// pcap/Source.h): included inside the generation's namespace iosource, after
// kPktSrcSize (sizeof(PktSrc), which changes with Packet's size). A
// PcapSource's own Properties (is_live 44 bytes in) and Stats follow its
// PktSrc; the rest of each object is padding here; the vtable is
// PcapSource's (its key function defined out of line). No include guard:
// each generation's header includes it once, in its own namespace.
class PktSrc {
public:
	struct Stats {
		uint64_t received = 0;
		uint64_t dropped = 0;
		uint64_t link = 0;
		uint64_t bytes_received = 0;
	};
	virtual ~PktSrc();
	char base_members[kPktSrcSize - 8] = {};
};

namespace pcap {
class PcapSource : public PktSrc {
public:
	~PcapSource() override;
	char props_head[44] = {};
	bool is_live = false;
	Stats stats;
	char rest[64] = {};
};
}   // namespace pcap
