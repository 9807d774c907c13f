/* Verifies one layer of a checkpoint against a fixture through the library.
 * usage: verify_layer CHECKPOINT FIXTURES LAYER */
#include <gpt2ffn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 4) return fprintf(stderr, "usage: verify_layer CHECKPOINT FIXTURES LAYER\n"), 2;
    g2f_error err = {0};
    g2f_model *model = NULL;
    g2f_fixture *fixture = NULL;
    g2f_verify_result res = {0};
    if (g2f_model_open(argv[1], NULL, &model, &err) || g2f_fixture_open(argv[2], &fixture, &err))
        return fprintf(stderr, "%s\n", err.msg), 2;
    size_t layer = strtoul(argv[3], NULL, 10), n = g2f_model_get_info(model)->n_layer;
    unsigned char *select = calloc(n, 1);
    if (layer < n) select[layer] = 1;
    g2f_verify_params p = {.gelu = G2F_GELU_TANH, .gelu_source = "example", .select = select,
                           .tol = {.lambda = G2F_TOL_LAMBDA}};
    int rc = 2;
    if (layer < n && g2f_verify_run(model, fixture, &p, &res, &err) == G2F_OK) {
        const g2f_layer_result *r = &res.layers[layer];
        printf("layer %zu: %s, margin %.3g: %s\n", layer, g2f_layer_status_name(r->status), r->out.margin,
               r->explanation);
        rc = r->status == G2F_LAYER_PASS ? 0 : 1;
    } else {
        fprintf(stderr, "%s\n", layer < n ? err.msg : "layer out of range");
    }
    g2f_verify_result_free(&res);
    free(select);
    g2f_fixture_close(fixture);
    g2f_model_close(model);
    return rc;
}
