// e4m3_mul: OCP FP8 E4M3 x E4M3 multiplier, combinational, synthesizable
// Verilog-2001.
//
// E4M3 (OCP 8-bit Floating Point Specification v1.0): 1 sign, 4 exponent
// and 3 fraction bits, bias 7, subnormals, no infinities, one NaN per sign
// (S.1111.111), largest finite value 448 (S.1111.110).
//
// Parameter OUT_FP16 selects the output format:
//
//   OUT_FP16 = 0  y is E4M3 (8 bits).  The exact product is rounded once to
//                 nearest, ties to even, subnormal results included.  On
//                 overflow (a product that rounds above 448) the pin `sat`
//                 chooses: sat = 1 gives +-448, sat = 0 gives NaN
//                 (S.1111.111, the product's sign).
//   OUT_FP16 = 1  y is IEEE binary16 (16 bits).  Every product of two E4M3
//                 values has at most 8 significant bits and is a multiple
//                 of 2**-18, so it is exact in FP16 (subnormals reach
//                 2**-24) unless it exceeds 65504: the products from 65536
//                 (= 2**16) to 200704 (= 448 * 448) overflow.  Nothing
//                 between 65504 and 65536 is a product, so no rounding ever
//                 happens; on overflow sat = 1 gives +-65504, sat = 0 gives
//                 +-infinity.
//
// NaN operands: the result is the first NaN operand (a, else b), as a NaN of
// the output format with that operand's sign (FP16: S.11111.1000000000).
// Zero times a finite value is a zero with the XOR of the signs.
//
// Define E4M3_MUL_BUG_ROUND_HALF_UP to build the deliberately broken variant
// used by the testbench's negative test: ties are rounded away from zero
// (the sticky and LSB terms of round-to-nearest-even are dropped).  Only
// the E4M3 output rounds, so only OUT_FP16 = 0 is affected.

module e4m3_mul #(
    parameter OUT_FP16 = 0
) (
    input  wire [7:0]                                a,
    input  wire [7:0]                                b,
    input  wire                                      sat,
    output wire [((OUT_FP16 != 0) ? 16 : 8) - 1:0] y
);

    // ---- decode -------------------------------------------------------------
    wire       sa = a[7];
    wire       sb = b[7];
    wire [3:0] ea = a[6:3];
    wire [3:0] eb = b[6:3];
    wire       nan_a = (a[6:0] == 7'h7f);
    wire       nan_b = (b[6:0] == 7'h7f);
    wire       s = sa ^ sb;

    // significands with the hidden bit (0 for subnormals), and the exponent
    // fields with a subnormal's field read as 1
    wire [3:0] ma = {ea != 4'd0, a[2:0]};
    wire [3:0] mb = {eb != 4'd0, b[2:0]};
    wire [4:0] ka = (ea == 4'd0) ? 5'd1 : {1'b0, ea};
    wire [4:0] kb = (eb == 4'd0) ? 5'd1 : {1'b0, eb};

    // ---- exact product: value = p * 2**(ka + kb - 20) --------------------------
    wire [7:0] p = ma * mb;
    wire [5:0] ksum = ka + kb;                 // 2 .. 30

    // position of p's leading one (p = 0 is handled separately)
    reg [2:0] lead;
    integer i;
    always @* begin
        lead = 3'd0;
        for (i = 0; i < 8; i = i + 1)
            if (p[i]) lead = i[2:0];
    end

    // p normalized: leading one at bit 7, value = pn/128 * 2**(lead + ksum - 20)
    wire [7:0] pn = p << (3'd7 - lead);
    wire       zero = (p == 8'd0);

    generate
    if (OUT_FP16 == 0) begin : g_e4m3
        // biased E4M3 exponent of the unrounded product: lead + ksum - 13
        // (-11 .. 24); at most 0 means a subnormal (or zero) result
        wire signed [6:0] eo = $signed({4'd0, lead}) + $signed({1'b0, ksum}) - 7'sd13;
        wire              sub = (eo < 7'sd1);
        // subnormal: shift right by 1 - eo (1 .. 12; pn's bits stay inside
        // ext, at worst all of them below the guard bit, in the sticky bits)
        wire [3:0]        sh = sub ? (4'd1 - eo[3:0]) : 4'd0;
        /* verilator lint_off UNUSEDSIGNAL */   // ext[23]; sticky in the bug variant
        wire [23:0]       ext = {pn, 16'd0} >> sh;
        // ext[23] is the hidden bit, ext[22:20] the fraction, ext[19] the
        // guard (round) bit, ext[18:0] the sticky bits
        wire [2:0]        frac = ext[22:20];
        wire              guard = ext[19];
        wire              sticky = |ext[18:0];
        /* verilator lint_on UNUSEDSIGNAL */
`ifdef E4M3_MUL_BUG_ROUND_HALF_UP
        wire              inc = guard;                          // BUG: ties away
`else
        wire              inc = guard & (sticky | frac[0]);     // ties to even
`endif
        // {exponent field, fraction} + increment: a carry out of the fraction
        // moves into the exponent (subnormal -> normal, 1.111 -> 10.000)
        wire [4:0]        efield = sub ? 5'd0 : eo[4:0];
        wire [7:0]        mag = {efield, frac} + {7'd0, inc};
        wire              ovf = (mag > 8'h7e);                  // above 448
        assign y = (nan_a)  ? a :
                   (nan_b)  ? b :
                   (zero)   ? {s, 7'h00} :
                   (ovf)    ? {s, (sat ? 7'h7e : 7'h7f)} :
                              {s, mag[6:0]};
    end else begin : g_fp16
        // biased FP16 exponent: lead + ksum - 5 (-3 .. 32); 31 and above
        // overflow, at most 0 is a subnormal (exact: see the header)
        wire signed [6:0] eo = $signed({4'd0, lead}) + $signed({1'b0, ksum}) - 7'sd5;
        wire              sub = (eo < 7'sd1);
        wire              ovf = (eo > 7'sd30);
        wire [2:0]        sh = sub ? (3'd1 - eo[2:0]) : 3'd0;  // 1 .. 4
        /* verilator lint_off UNUSEDSIGNAL */   // sig[10], the hidden bit
        wire [10:0]       sig = {pn, 3'd0} >> sh;
        /* verilator lint_on UNUSEDSIGNAL */
        wire [4:0]        efield = sub ? 5'd0 : eo[4:0];
        assign y = (nan_a)  ? {sa, 15'h7e00} :
                   (nan_b)  ? {sb, 15'h7e00} :
                   (zero)   ? {s, 15'h0000} :
                   (ovf)    ? {s, (sat ? 15'h7bff : 15'h7c00)} :
                              {s, efield, sig[9:0]};
    end
    endgenerate

endmodule
