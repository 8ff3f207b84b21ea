// The tensor types a GGUF file may name (ggml's type ids), with the size of their blocks: a tensor
// of a type holds its rows as blocks of `block` values stored in `bytes` bytes each. The table is
// gguf-py's GGML_QUANT_SIZES (tests/unit/test_gguf_reader.py compares them); ids ggml has retired
// (4, 5: Q4_2/Q4_3; 31..33, 36..38: the repacked Q4_0/IQ4_NL layouts) are not in it, so a file
// naming them is refused like one naming an id that never existed.

/** @typedef {{id: number, name: string, block: number, bytes: number}} GGMLType */

/** @type {Array<[number, string, number, number]>} id, name, values per block, bytes per block */
const TABLE = [
  [0, "F32", 1, 4], [1, "F16", 1, 2], [2, "Q4_0", 32, 18], [3, "Q4_1", 32, 20], [6, "Q5_0", 32, 22],
  [7, "Q5_1", 32, 24], [8, "Q8_0", 32, 34], [9, "Q8_1", 32, 40], [10, "Q2_K", 256, 84], [11, "Q3_K", 256, 110],
  [12, "Q4_K", 256, 144], [13, "Q5_K", 256, 176], [14, "Q6_K", 256, 210], [15, "Q8_K", 256, 292],
  [16, "IQ2_XXS", 256, 66], [17, "IQ2_XS", 256, 74], [18, "IQ3_XXS", 256, 98], [19, "IQ1_S", 256, 50],
  [20, "IQ4_NL", 32, 18], [21, "IQ3_S", 256, 110], [22, "IQ2_S", 256, 82], [23, "IQ4_XS", 256, 136],
  [24, "I8", 1, 1], [25, "I16", 1, 2], [26, "I32", 1, 4], [27, "I64", 1, 8], [28, "F64", 1, 8],
  [29, "IQ1_M", 256, 56], [30, "BF16", 1, 2], [34, "TQ1_0", 256, 54], [35, "TQ2_0", 256, 66],
  [39, "MXFP4", 32, 17], [40, "NVFP4", 64, 36], [41, "Q1_0", 128, 18],
];

/** @type {Map<number, GGMLType>} ggml type id -> its block layout */
export const GGML_TYPES = new Map(TABLE.map(([id, name, block, bytes]) => [id, { id, name, block, bytes }]));

/** GGUF metadata value type ids -> names (the GGUF spec's gguf_metadata_value_type). */
export const VALUE_TYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string",
  "array", "uint64", "int64", "float64"];
