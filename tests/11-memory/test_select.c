/* test_select.c - lab 11, task 4: the cheapest plan under a byte budget
 * (chapter 11, section 7), against every plan of the chain walked through
 * the executor (memory_test.c). */
#include "grader.h"
#include "memory_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The fewest recompute FLOPs of any plan within budget; -1 when none fits. */
static double best_of_all(const lab_chain *c, size_t budget)
{
    int L = c->num_layers;
    unsigned char keep[24];
    double best = -1;
    for (unsigned bits = 0; bits < 1u << (L - 1); bits++) {
        for (int i = 0; i < L; i++)
            keep[i] = i == L - 1 || (bits >> i & 1);
        size_t peak;
        int rec;
        double flops;
        mt_walk(c, keep, &peak, &rec, &flops);
        if (peak <= budget && (best < 0 || flops < best))
            best = flops;
    }
    return best;
}

/* lab_plan_select at budget: within it and as cheap as the best plan, or
 * refused when no plan fits. */
static void expect_best(const lab_chain *c, size_t budget, const char *what)
{
    double best = best_of_all(c, budget);
    lab_plan p;
    EXPECT_OK(lab_plan_init(&p, c->num_layers));
    dt_result r = lab_plan_select(c, budget, &p);
    if (best < 0) {
        EXPECT(r == DT_ERR_INVALID_ARG, "%s, budget %zu: no plan fits, lab_plan_select returned "
               "%s", what, budget, dt_strerror(r));
    } else {
        EXPECT(r == DT_OK, "%s, budget %zu: lab_plan_select returned %s (%s); a plan of %.0f "
               "recomputed FLOPs fits", what, budget, dt_strerror(r), dt_last_error(), best);
        size_t peak;
        int rec;
        double flops;
        mt_walk(c, p.keep, &peak, &rec, &flops);
        EXPECT(peak <= budget, "%s: the plan chosen for a budget of %zu bytes peaks at %zu", what,
               budget, peak);
        EXPECT(flops == best, "%s, budget %zu: the plan chosen recomputes %.0f FLOPs; the "
               "cheapest plan within the budget recomputes %.0f", what, budget, flops, best);
    }
    lab_plan_free(&p);
}

TEST(select_fits_the_budget_and_recomputes_least, 3)
{
    dt_test_see("chapter 11, section 7");
    /* ten equal layers, outputs of 1000 bytes, 1 FLOP each, 500 fixed */
    lab_chain c;
    EXPECT_OK(lab_chain_alloc(&c, 10));
    for (int i = 0; i < 10; i++)
        c.out_bytes[i] = 1000, c.flops[i] = 1;
    c.fixed_bytes = 500;
    for (size_t b = 500; b <= 500 + 10 * 1000 + 1000; b += 250)
        expect_best(&c, b, "10 equal layers");
    lab_chain_free(&c);
}

TEST(select_unequal_layers_optimum, 2)
{
    dt_test_see("chapter 11, section 7");
    for (uint64_t seed = 1; seed <= 4; seed++) {
        lab_chain c;
        EXPECT_OK(lab_chain_alloc(&c, 11));
        size_t all = 0;
        for (int i = 0; i < 11; i++) {
            c.out_bytes[i] = 100 * (1 + dt_hash64(seed, 1, (uint64_t)i) % 9);
            c.flops[i] = (double)(10 + dt_hash64(seed, 2, (uint64_t)i) % 90);
            all += c.out_bytes[i];
        }
        c.fixed_bytes = 700;
        char what[48];
        snprintf(what, sizeof what, "unequal chain %d", (int)seed);
        for (int k = 0; k <= 16; k++)
            expect_best(&c, c.fixed_bytes + all * (size_t)k / 16, what);
        lab_chain_free(&c);
    }
}

TEST(select_refuses_a_budget_no_plan_fits, 1)
{
    dt_test_see("chapter 11, section 7");
    lab_chain c;
    lab_plan p;
    EXPECT_OK(lab_chain_alloc(&c, 10));
    for (int i = 0; i < 10; i++)
        c.out_bytes[i] = 1000, c.flops[i] = 1;
    c.fixed_bytes = 500;
    EXPECT_OK(lab_plan_init(&p, 10));
    /* the least peak of 10 equal layers is 4 outputs (4 * 5 / 2 = 10) */
    EXPECT_OK(lab_plan_select(&c, 4500, &p));
    EXPECT_ERR(lab_plan_select(&c, 4499, &p), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "4499"), "the message names the budget: %s", dt_last_error());
    EXPECT_ERR(lab_plan_select(&c, 100, &p), DT_ERR_INVALID_ARG);
    lab_plan_free(&p);
    lab_chain_free(&c);
}
