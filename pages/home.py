"""Home page (placeholder until its issue lands)."""

import streamlit as st

st.title("Home")
st.info("This page is being built.")
