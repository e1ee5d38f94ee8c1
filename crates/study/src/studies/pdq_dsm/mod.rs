//! The pdq-dsm study: Falsafi & Wood (HPCA 1999) Section 5.2, the seven
//! shared-memory applications on S-COMA, Hurricane, Hurricane-1 and Mult.

pub mod claims;
