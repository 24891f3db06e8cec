// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320): one kernel builds the 256-entry
// lookup table, the other computes an independent CRC for each fixed-size chunk of bytes.
#define CRC32_POLY 0xEDB88320u

__kernel void crc32_build_lookup_table(__global uint* table)
{
    const uint b = get_global_id(0);
    if (b >= 256u) return;
    uint c = b;
    for (int k = 0; k < 8; ++k)
        c = (c & 1u) ? (CRC32_POLY ^ (c >> 1)) : (c >> 1);
    table[b] = c;
}

__kernel void crc32_per_chunk_tabled(__global const uchar* data,
                                     __global const uint* table,
                                     __global uint* chunkCrc,
                                     const uint totalBytes,
                                     const uint chunkBytes)
{
    __local uint lut[256];
    for (uint t = get_local_id(0); t < 256u; t += get_local_size(0))
        lut[t] = table[t];
    barrier(CLK_LOCAL_MEM_FENCE);

    const uint chunk = get_global_id(0);
    const uint begin = chunk * chunkBytes;
    if (begin >= totalBytes) return;
    const uint end = min(begin + chunkBytes, totalBytes);

    uint crc = 0xFFFFFFFFu;
    uint pos = begin;
    for (; pos + 4u <= end; pos += 4u) {          /* 4 bytes per iteration */
        crc = lut[(crc ^ data[pos])      & 0xFFu] ^ (crc >> 8);
        crc = lut[(crc ^ data[pos + 1u]) & 0xFFu] ^ (crc >> 8);
        crc = lut[(crc ^ data[pos + 2u]) & 0xFFu] ^ (crc >> 8);
        crc = lut[(crc ^ data[pos + 3u]) & 0xFFu] ^ (crc >> 8);
    }
    for (; pos < end; ++pos)
        crc = lut[(crc ^ data[pos]) & 0xFFu] ^ (crc >> 8);
    chunkCrc[chunk] = ~crc;
}
